/* Ranks and collectives (comm.h): MPI when built in (GF_HAVE_MPI) and the process was started by an MPI
 * launcher; one rank of one otherwise. A process that mpirun did not start never calls MPI_Init (OpenMPI's
 * singleton start spawns helpers and prints warnings in containers), so a plain `grassflow train` behaves
 * exactly as a build without MPI. */
#include "core/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "grassflow.h"

static int g_rank = 0, g_size = 1;

#ifdef GF_HAVE_MPI
#include <mpi.h>

static int g_inited; /* MPI_Init was called here */
static char g_library[MPI_MAX_LIBRARY_VERSION_STRING];

/* An MPI launcher's environment: OpenMPI's mpirun, or a PMI/PMIx launcher (srun, hydra). */
static int launched_by_mpi(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

int gf_dist_init(int *argc, char ***argv) {
    if (g_inited || !launched_by_mpi()) return 0;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return gf_fail("MPI_Init failed: this process was started by an MPI launcher (mpirun), but MPI could not start");
    g_inited = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* an error in a collective (a rank gone) returns to us instead of aborting, so it is reported */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return 0;
}

void gf_dist_finalize(void) {
    if (g_inited) MPI_Finalize();
    g_inited = 0;
}

void gf_dist_abort(int code) {
    if (g_inited && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

const char *gf_dist_library(void) {
    if (!g_library[0]) {
        int len = 0;
        MPI_Get_library_version(g_library, &len);
        for (int i = 0; i < len; i++) /* the first line, up to the first comma ("Open MPI v4.1.4") */
            if (g_library[i] == ',' || g_library[i] == '\n') g_library[i] = '\0';
    }
    return g_library;
}

static int check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return gf_fail("rank %d of %d: %s failed: %s (another rank stopped or died)", g_rank, g_size, what, msg);
}

/* n elements of a type in calls of at most INT_MAX / 2 (MPI's counts are ints) */
static int allreduce(void *x, int64_t n, MPI_Datatype type, int64_t elem, MPI_Op op, const char *what) {
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Allreduce(MPI_IN_PLACE, (char *)x + at * elem, (int)k, type, op, MPI_COMM_WORLD), what)) return -1;
        at += k;
    }
    return 0;
}

int gf_comm_sum_f32(float *x, int64_t n) {
    return g_size == 1 ? 0 : allreduce(x, n, MPI_FLOAT, 4, MPI_SUM, "summing the gradients (MPI_Allreduce)");
}
int gf_comm_sum_f64(double *x, int64_t n) {
    return g_size == 1 ? 0 : allreduce(x, n, MPI_DOUBLE, 8, MPI_SUM, "summing over the ranks (MPI_Allreduce)");
}
int gf_comm_sum_i64(int64_t *x, int64_t n) {
    return g_size == 1 ? 0 : allreduce(x, n, MPI_INT64_T, 8, MPI_SUM, "summing counts over the ranks (MPI_Allreduce)");
}
int gf_comm_max_int(int *x) {
    return g_size == 1 ? 0 : allreduce(x, 1, MPI_INT, 4, MPI_MAX, "agreeing over the ranks (MPI_Allreduce)");
}

int gf_comm_send(const float *x, int64_t n, double d, int to) {
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Send(x + at, (int)k, MPI_FLOAT, to, 1, MPI_COMM_WORLD), "sending a partial sum (MPI_Send)")) return -1;
        at += k;
    }
    return check(MPI_Send(&d, 1, MPI_DOUBLE, to, 2, MPI_COMM_WORLD), "sending a partial sum (MPI_Send)");
}

int gf_comm_recv(float *x, int64_t n, double *d, int from) {
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Recv(x + at, (int)k, MPI_FLOAT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "receiving a partial sum (MPI_Recv)"))
            return -1;
        at += k;
    }
    return check(MPI_Recv(d, 1, MPI_DOUBLE, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "receiving a partial sum (MPI_Recv)");
}

int gf_comm_bcast(void *buf, int64_t bytes, int root) {
    for (int64_t at = 0; g_size > 1 && at < bytes;) {
        const int64_t k = bytes - at < INT_MAX / 2 ? bytes - at : INT_MAX / 2;
        if (check(MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast")) return -1;
        at += k;
    }
    return 0;
}

#else /* one process */

int gf_dist_init(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}
void gf_dist_finalize(void) {}
void gf_dist_abort(int code) { (void)code; }
const char *gf_dist_library(void) { return NULL; }
int gf_comm_sum_f32(float *x, int64_t n) { return (void)x, (void)n, 0; }
int gf_comm_sum_f64(double *x, int64_t n) { return (void)x, (void)n, 0; }
int gf_comm_sum_i64(int64_t *x, int64_t n) { return (void)x, (void)n, 0; }
int gf_comm_max_int(int *x) { return (void)x, 0; }
int gf_comm_bcast(void *buf, int64_t bytes, int root) { return (void)buf, (void)bytes, (void)root, 0; }
int gf_comm_send(const float *x, int64_t n, double d, int to) {
    (void)x, (void)n, (void)d, (void)to;
    return gf_fail("no other rank to send to (a build without MPI)");
}
int gf_comm_recv(float *x, int64_t n, double *d, int from) {
    (void)x, (void)n, (void)d, (void)from;
    return gf_fail("no other rank to receive from (a build without MPI)");
}

#endif

int gf_comm_rank(void) { return g_rank; }
int gf_comm_size(void) { return g_size; }
int gf_dist_rank(void) { return g_rank; }
int gf_dist_size(void) { return g_size; }
