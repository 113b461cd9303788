/* The time of one MPI_Allreduce (sum, in place) of n floats: what a data-parallel training step adds to
 * its compute for a model of n trainable parameters (docs/distributed.md). bench/mpi_scaling.sh builds it
 * with mpicc and runs it under mpirun.
 *   allreduce N [REPS]      prints {"floats": N, "ranks": R, "ms": best of REPS, "gb_per_s": bus bandwidth}
 * The bus bandwidth is the usual one of a ring allreduce: 2 (R - 1) / R * 4 N bytes over the time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long n = argc > 1 ? atol(argv[1]) : 0;
    const int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (n <= 0 || n > (1L << 30) || reps <= 0) {
        if (rank == 0) fprintf(stderr, "usage: allreduce N [REPS] (N floats, 1 to 2^30; REPS > 0)\n");
        MPI_Finalize();
        return 2;
    }
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) {
        fprintf(stderr, "allreduce: rank %d: no memory for %ld floats\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < n; i++) x[i] = (float)(i % 7) * 0.5f;
    double best = 1e30;
    for (int r = -1; r < reps; r++) { /* one warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* the slowest rank's */
        if (r >= 0 && t < best) best = t;
    }
    if (rank == 0)
        printf("{\"floats\": %ld, \"ranks\": %d, \"ms\": %.3f, \"gb_per_s\": %.2f}\n", n, size, 1e3 * best,
               size > 1 ? 2.0 * (size - 1) / size * 4.0 * (double)n / best / 1e9 : 0.0);
    free(x);
    MPI_Finalize();
    return 0;
}
