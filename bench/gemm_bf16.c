/* oneDNN against libxsmm for the bf16 matmuls of training (docs/precision.md: "measure both and say which"):
 * every matmul shape of a word-level 6-layer training step at B = 32, L = 128 (forward, and the backward's
 * two products), timed as fp32 sgemm (OpenBLAS, grassflow's door), bf16 through grassflow's door (oneDNN;
 * the operands' rounding to bf16 included) and bf16 through libxsmm 1.17 (its JIT kernels over blocks, see
 * xsmm()).
 * Prints a Markdown table; bench/gemm_bf16.sh builds and runs it with one thread. The two bf16 results are
 * checked against each other (they agree to fp32 summation error, or the row says so). */
#include <libxsmm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow.h"
#include "base/clock.h"

/* the same rounding as grassflow's (to nearest even; the operands' inputs are finite) */
static void to_bf16(const float *x, libxsmm_bfloat16 *h, long n) {
    for (long i = 0; i < n; i++) {
        unsigned u;
        memcpy(&u, &x[i], 4);
        u += 0x7fffu + ((u >> 16) & 1u);
        h[i] = (libxsmm_bfloat16)(u >> 16);
    }
}

typedef struct {
    const char *what;
    int ta, tb;
    long M, N, K;
} shape;

/* libxsmm 1.17 is a small-matrix library: libxsmm_bsgemm JIT-compiles a kernel only up to LIBXSMM_MAX_MNK
 * (64^3 by default) and otherwise falls back to a generic loop, which on the Xeon of 2026-11-28 ran a
 * 512 x 256 x 256 product at 0.5 GFLOP/s and read its first operand in a layout other than the JIT
 * kernels' (the results differed from oneDNN's). So the large product is tiled here, the way libxsmm is
 * meant to be used: C in blocks of XB x XB, each the sum over K blocks of one JIT kernel call
 * (libxsmm_bsmmdispatch, bf16 in, fp32 out, beta 0 on the first K block and 1 after).
 * The kernels take their first operand in the VNNI2 layout (pairs of k interleaved), so the row-major
 * C (M,N) = op(A) op(B) is computed as the column-major C^T (N,M) = A' B' with A' = op(B)^T (N x K) packed
 * into VNNI2 and B' = op(A)^T (K x M) contiguous, both rounded to bf16 by pack() before the timing:
 * libxsmm's time is its kernels' alone, while grassflow's door is timed with its rounding of both operands
 * (in libxsmm's favour). One thread each: the comparison is of kernels. */
enum { XB = 64 };

static void pack(const shape *s, const float *A, const float *B, libxsmm_bfloat16 *Av, libxsmm_bfloat16 *Bc) {
    const long m = s->N, n = s->M, k = s->K;
    if (s->tb) /* A'(i,l) = B[i][l] (B stored N x K) */
        for (long i = 0; i < m; i++)
            for (long l = 0; l < k; l++) to_bf16(&B[i * k + l], &Av[(l / 2) * m * 2 + i * 2 + (l % 2)], 1);
    else /* A'(i,l) = B[l][i] (B stored K x N) */
        for (long l = 0; l < k; l++)
            for (long i = 0; i < m; i++) to_bf16(&B[l * m + i], &Av[(l / 2) * m * 2 + i * 2 + (l % 2)], 1);
    if (s->ta) /* B'(l,j) = A[l][j] (A stored K x M) */
        for (long l = 0; l < k; l++)
            for (long j = 0; j < n; j++) to_bf16(&A[l * n + j], &Bc[j * k + l], 1);
    else /* B'(l,j) = A[j][l] (A stored M x K): a plain copy */
        to_bf16(A, Bc, n * k);
}

/* C' (M x N, column-major) = A' (M x K, VNNI2) B' (K x N) in XB-blocks (K blocks even, as VNNI2 needs) */
static int xsmm(const shape *s, const libxsmm_bfloat16 *Av, const libxsmm_bfloat16 *Bc, float *C) {
    const libxsmm_blasint M = s->N, N = s->M, K = s->K;
    const float alpha = 1.0f, zero = 0.0f, one = 1.0f;
    for (libxsmm_blasint j0 = 0; j0 < N; j0 += XB)
        for (libxsmm_blasint i0 = 0; i0 < M; i0 += XB)
            for (libxsmm_blasint k0 = 0; k0 < K; k0 += XB) {
                const libxsmm_blasint mb = M - i0 < XB ? M - i0 : XB, nb = N - j0 < XB ? N - j0 : XB,
                                      kb = K - k0 < XB ? K - k0 : XB;
                const libxsmm_bsmmfunction f =
                    libxsmm_bsmmdispatch(mb, nb, kb, &M, &K, &M, &alpha, k0 ? &one : &zero, NULL, NULL);
                if (!f) return -1;
                f(Av + (k0 / 2) * M * 2 + i0 * 2, Bc + j0 * K + k0, C + j0 * M + i0);
            }
    return 0;
}

static double best_of(int reps, void (*f)(void *), void *ctx) {
    double best = 1e30;
    f(ctx); /* warm-up */
    for (int r = 0; r < reps; r++) {
        const double t = gf_clock_s();
        f(ctx);
        best = fmin(best, gf_clock_s() - t);
    }
    return best;
}

typedef struct {
    const shape *s;
    float *A, *B, *C;
    libxsmm_bfloat16 *Ah, *Bh;
    int failed; /* libxsmm made no kernel for a block */
} job;

static void run_door(void *p) {
    const job *j = p;
    const shape *s = j->s;
    gf_sgemm(s->ta, s->tb, s->M, s->N, s->K, 1.0f, j->A, s->ta ? s->M : s->K, j->B, s->tb ? s->K : s->N, 0.0f, j->C, s->N);
}

static void run_xsmm(void *p) {
    job *j = p;
    if (xsmm(j->s, j->Bh, j->Ah, j->C)) j->failed = 1;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* each row as it is measured (the script may stop a slow table) */
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    const long T = 32 * 128, V = 33278;
    const shape shapes[] = {
        {"red (256 -> 32) forward", 0, 1, T, 32, 256},     {"plucker (496 -> 256) forward", 0, 1, T, 256, 496},
        {"gate (512 -> 256) forward", 0, 1, T, 256, 512},  {"fc1 (256 -> 1024) forward", 0, 1, T, 1024, 256},
        {"fc2 (1024 -> 256) forward", 0, 1, T, 256, 1024}, {"fc1 backward, input", 0, 0, T, 256, 1024},
        {"fc1 backward, weight", 1, 0, 1024, 256, T},      {"head (256 -> 33278) forward", 0, 1, T, V, 256},
        {"head backward, input", 0, 0, T, 256, V},         {"head backward, weight", 1, 0, V, 256, T},
    };
    libxsmm_init();
    if (gf_precision_unavailable(GF_PRECISION_BF16)) {
        fprintf(stderr, "gemm_bf16: %s\n", gf_precision_unavailable(GF_PRECISION_BF16));
        return 1;
    }
    printf("| matmul (M x N x K) | fp32 OpenBLAS GFLOP/s | bf16 oneDNN GFLOP/s | bf16 libxsmm GFLOP/s | oneDNN / libxsmm |\n"
           "|---|---|---|---|---|\n");
    double tot[3] = {0, 0, 0};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const shape *s = &shapes[i];
        job j = {.s = s, .A = malloc(4 * s->M * s->K), .B = malloc(4 * s->K * s->N), .C = malloc(4 * s->M * s->N),
                 .Ah = malloc(2 * s->M * s->K), .Bh = malloc(2 * s->K * s->N)};
        float *C2 = malloc(4 * s->M * s->N);
        for (long k = 0; k < s->M * s->K; k++) j.A[k] = (float)((k * 7919) % 1000) / 1000.0f - 0.5f;
        for (long k = 0; k < s->K * s->N; k++) j.B[k] = (float)((k * 104729) % 1000) / 1000.0f - 0.5f;
        double t[3];
        gf_set_matmul_precision(GF_PRECISION_FP32);
        t[0] = best_of(reps, run_door, &j);
        gf_set_matmul_precision(GF_PRECISION_BF16);
        t[1] = best_of(reps, run_door, &j);
        memcpy(C2, j.C, 4 * s->M * s->N);
        memset(j.C, 0, 4 * s->M * s->N); /* a call that computed nothing shows */
        pack(s, j.A, j.B, j.Bh, j.Ah);
        t[2] = best_of(reps, run_xsmm, &j);
        if (j.failed) {
            fprintf(stderr, "gemm_bf16: libxsmm made no bf16 kernel for a block of %s (its JIT needs AVX-512)\n", s->what);
            return 1;
        }
        double diff = 0, mag = 0;
        for (long k = 0; k < s->M * s->N; k++) diff = fmax(diff, fabs(C2[k] - j.C[k])), mag = fmax(mag, fabs(C2[k]));
        const double fl = 2.0 * s->M * s->N * s->K;
        printf("| %s (%ld x %ld x %ld) | %.0f | %.0f | %.0f | %.2fx |%s\n", s->what, s->M, s->N, s->K, fl / t[0] / 1e9,
               fl / t[1] / 1e9, fl / t[2] / 1e9, t[2] / t[1],
               diff > 1e-4 * mag * sqrt((double)s->K) ? " **the two bf16 results differ**" : "");
        for (int k = 0; k < 3; k++) tot[k] += t[k];
        free(j.A), free(j.B), free(j.C), free(j.Ah), free(j.Bh), free(C2);
    }
    printf("| all of them (time) | %.1f ms | %.1f ms | %.1f ms | %.2fx |\n", 1e3 * tot[0], 1e3 * tot[1], 1e3 * tot[2],
           tot[2] / tot[1]);
    printf("\nbf16 kernel (oneDNN): %s, CPU ISA %s; fp32: OpenBLAS %s; %d threads\n", gf_bf16_kernel(), gf_bf16_isa(),
           gf_blas_kernel(), gf_threads());
    libxsmm_finalize();
    return 0;
}
