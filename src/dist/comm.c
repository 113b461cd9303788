/* Ranks and collectives (comm.h): MPI when built in (GF_HAVE_MPI) and the process was started by an MPI
 * launcher; one rank of one otherwise. A process that mpirun did not start never calls MPI_Init (OpenMPI's
 * singleton start spawns helpers and prints warnings in containers), so a plain `grassflow train` behaves
 * exactly as a build without MPI. */
#include "dist/comm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "grassflow_plugin.h"

static int g_rank = 0, g_size = 1;

#ifdef GF_HAVE_MPI
#include <mpi.h>

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include "base/clock.h"

static int g_inited; /* MPI_Init was called here */
static char g_library[MPI_MAX_LIBRARY_VERSION_STRING];

/* ---- the watchdog: a collective that waits longer than GRASSFLOW_MPI_TIMEOUT seconds (default 600; 0:
 * never) for the other ranks ends this rank with a message, and mpirun then ends the job. mpirun itself
 * ends a job whose rank died; this is for a rank that hangs (stopped, stuck in I/O) without dying. */
static double g_timeout = 600.0;
static _Atomic(double) g_since;            /* when the collective in progress began (CLOCK_MONOTONIC); 0: none */
static const char *_Atomic g_what = "";

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        sleep(1);
        const double t0 = atomic_load(&g_since);
        if (t0 > 0 && gf_clock_s() - t0 > g_timeout) {
            fprintf(stderr, "grassflow: error: rank %d of %d: %s has waited %.0f s for the other ranks "
                    "(GRASSFLOW_MPI_TIMEOUT=%g): one of them hangs or died; ending the job\n", g_rank, g_size,
                    atomic_load(&g_what), gf_clock_s() - t0, g_timeout);
            fflush(stderr);
            _exit(1); /* mpirun sees a rank end with an error and ends the others */
        }
    }
    return NULL;
}

static void begin(const char *what) {
    atomic_store(&g_what, what);
    atomic_store(&g_since, gf_clock_s());
}
static void end(void) { atomic_store(&g_since, 0.0); }

static int start_watchdog(void) {
    const char *e = getenv("GRASSFLOW_MPI_TIMEOUT");
    if (e) {
        char *rest;
        g_timeout = strtod(e, &rest);
        if (rest == e || *rest || !(g_timeout >= 0) || g_timeout > 1e9)
            return gf_fail("GRASSFLOW_MPI_TIMEOUT is '%s'; expected seconds, 0 to 1e9 (0: no timeout)", e);
    }
    if (g_timeout == 0 || g_size == 1) return 0;
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL)) return gf_fail("MPI: cannot start the collectives' watchdog thread");
    pthread_detach(t);
    return 0;
}

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
    gf_note_mute(g_rank != 0); /* a note is rank 0's to tell, once */
    /* an error in a collective (a rank gone) returns to us instead of aborting, so it is reported */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return start_watchdog();
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
    begin(what);
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Allreduce(MPI_IN_PLACE, (char *)x + at * elem, (int)k, type, op, MPI_COMM_WORLD), what)) return end(), -1;
        at += k;
    }
    end();
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
int gf_comm_max_i64(int64_t *x, int64_t n) {
    return g_size == 1 ? 0 : allreduce(x, n, MPI_INT64_T, 8, MPI_MAX, "agreeing on the batches' lengths (MPI_Allreduce)");
}

int gf_comm_send(const float *x, int64_t n, double d, int to) {
    const char *what = "sending a partial sum to rank 0 (MPI_Send)";
    begin(what);
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Send(x + at, (int)k, MPI_FLOAT, to, 1, MPI_COMM_WORLD), what)) return end(), -1;
        at += k;
    }
    const int rc = check(MPI_Send(&d, 1, MPI_DOUBLE, to, 2, MPI_COMM_WORLD), what);
    end();
    return rc;
}

int gf_comm_recv(float *x, int64_t n, double *d, int from) {
    const char *what = "receiving a partial sum (MPI_Recv)";
    begin(what);
    for (int64_t at = 0; at < n;) {
        const int64_t k = n - at < INT_MAX / 2 ? n - at : INT_MAX / 2;
        if (check(MPI_Recv(x + at, (int)k, MPI_FLOAT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), what)) return end(), -1;
        at += k;
    }
    const int rc = check(MPI_Recv(d, 1, MPI_DOUBLE, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE), what);
    end();
    return rc;
}

int gf_comm_bcast(void *buf, int64_t bytes, int root) {
    const char *what = "receiving rank 0's result (MPI_Bcast)";
    begin(what);
    for (int64_t at = 0; g_size > 1 && at < bytes;) {
        const int64_t k = bytes - at < INT_MAX / 2 ? bytes - at : INT_MAX / 2;
        if (check(MPI_Bcast((char *)buf + at, (int)k, MPI_BYTE, root, MPI_COMM_WORLD), what)) return end(), -1;
        at += k;
    }
    end();
    return 0;
}

int gf_comm_allgather(const void *mine, void *all, int64_t bytes) {
    if (g_size == 1) return memmove(all, mine, (size_t)bytes), 0;
    if (bytes > INT_MAX / 2) return gf_fail("MPI: %lld bytes per rank are too many to gather at once", (long long)bytes);
    const char *what = "comparing what the ranks were started with (MPI_Allgather)";
    begin(what);
    const int rc = check(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD), what);
    end();
    return rc;
}

int gf_comm_barrier(void) {
    if (g_size == 1) return 0;
    const char *what = "waiting for every rank to reach the same point (MPI_Barrier)";
    begin(what);
    const int rc = check(MPI_Barrier(MPI_COMM_WORLD), what);
    end();
    return rc;
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
int gf_comm_max_i64(int64_t *x, int64_t n) { return (void)x, (void)n, 0; }
int gf_comm_bcast(void *buf, int64_t bytes, int root) { return (void)buf, (void)bytes, (void)root, 0; }
int gf_comm_allgather(const void *mine, void *all, int64_t bytes) { return memmove(all, mine, (size_t)bytes), 0; }
int gf_comm_barrier(void) { return 0; }
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
int gf_dist_barrier(void) { return gf_comm_barrier(); }
int gf_dist_max_int(int *x) { return gf_comm_max_int(x); }
