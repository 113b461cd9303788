/* The processes of a data-parallel run (docs/distributed.md): MPI when grassflow was built with it
 * (GF_HAVE_MPI) and started by mpirun; otherwise one rank of one, where every call below is the identity.
 * The public face is gf_dist_* in grassflow.h; the trainer and the evaluation use these. Every collective
 * returns 0, or -1 with gf_fail's message (a rank gone, a timeout). */
#ifndef GF_CORE_COMM_H
#define GF_CORE_COMM_H

#include <stdint.h>

int gf_comm_rank(void);
int gf_comm_size(void);
/* x (n) summed over the ranks, in place, on every rank (MPI_Allreduce). The order of the additions is
 * MPI's: equal on every rank, but not that of one process. */
int gf_comm_sum_f32(float *x, int64_t n);
int gf_comm_sum_f64(double *x, int64_t n);
int gf_comm_sum_i64(int64_t *x, int64_t n);
/* *x = the largest of the ranks' *x, on every rank (a flag one rank raised: a signal, an error). */
int gf_comm_max_int(int *x);
int gf_comm_max_i64(int64_t *x, int64_t n); /* each of n, in place */
/* Point to point, in order: n floats and a double from this rank to rank `to`, received by rank `from`. */
int gf_comm_send(const float *x, int64_t n, double d, int to);
int gf_comm_recv(float *x, int64_t n, double *d, int from);
/* bytes of buf from rank root to every rank. */
int gf_comm_bcast(void *buf, int64_t bytes, int root);
/* Every rank's `bytes` bytes (the same count on every rank), in rank order, into all (size x bytes). */
int gf_comm_allgather(const void *mine, void *all, int64_t bytes);
/* Returns once every rank has called it (MPI_Barrier): what the ranks read before it, one rank may change
 * after it. */
int gf_comm_barrier(void);

#endif
