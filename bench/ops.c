/* The elementwise ops of a small Transformer's training step, timed alone: GELU (erf) forward and backward
 * over the d_ff activations and LayerNorm forward and backward over the d_model rows of one batch of the
 * character-level benchmark (B 16 x L 256 = 4,096 rows, d 128, d_ff 512); GELU both plain and keeping its erf
 * term for the backward (what training runs); and the matmuls of the step's linear layers in fp32 and
 * fp32-fast. Best of REPS calls each, in ms
 * and ns per element. bash bench/ops.sh builds it against build/libgrassflow.a and runs it with 1 and 2
 * threads; the same command on two builds (BUILD=...) compares them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "grassflow.h"
#include "ops/ops.h"
#include "base/clock.h"

static float *filled(int64_t n, int mod, float step, float off) {
    float *x = malloc((size_t)n * sizeof(float));
    if (!x) exit(1);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % mod) * step + off;
    return x;
}

/* The matmuls of the linear layers of one step (4 layers: qkv, proj, fc1, fc2; the tied head), forward,
 * input gradient and weight gradient, through gf_sgemm in the precision given, best of reps each: what
 * bounds a step from below whatever the elementwise ops cost (docs/bench/method.md). */
static void linear_layers(int reps, gf_precision prec) {
    static const struct {
        bool ta, tb;
        int64_t M, N, K, count;
    } sh[] = {
        {0, 1, 4096, 384, 128, 4}, {0, 1, 4096, 128, 128, 4}, {0, 1, 4096, 512, 128, 4}, {0, 1, 4096, 128, 512, 4},
        {0, 1, 4096, 65, 128, 1},  {0, 0, 4096, 128, 384, 4}, {0, 0, 4096, 128, 128, 4}, {0, 0, 4096, 128, 512, 4},
        {0, 0, 4096, 512, 128, 4}, {0, 0, 4096, 128, 65, 1},  {1, 0, 384, 128, 4096, 4}, {1, 0, 128, 128, 4096, 4},
        {1, 0, 512, 128, 4096, 4}, {1, 0, 128, 512, 4096, 4}, {1, 0, 65, 128, 4096, 1},
    };
    float *A = filled(4096 * 512, 13, 0.01f, 0.0f), *B = filled(4096 * 512, 7, 0.02f, 0.0f), *C = filled(4096 * 512, 1, 0.0f, 0.0f);
    if (gf_set_matmul_precision(prec)) exit(1);
    double total = 0, flop = 0;
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        double best = 1e9;
        for (int r = 0; r < reps; r++) {
            double s = gf_clock_s();
            gf_sgemm(sh[i].ta, sh[i].tb, sh[i].M, sh[i].N, sh[i].K, 1.0f, A, sh[i].ta ? sh[i].M : sh[i].K, B,
                     sh[i].tb ? sh[i].K : sh[i].N, 1.0f, C, sh[i].N);
            double e = gf_clock_s() - s;
            best = e < best ? e : best;
        }
        total += best * (double)sh[i].count;
        flop += 2.0 * (double)(sh[i].M * sh[i].N * sh[i].K * sh[i].count);
    }
    printf("| %d | the linear layers' matmuls of one step, %s (%s; %.2f GFLOP) | %.3f ms | %.0f GFLOP/s |\n", gf_threads(),
           gf_precision_name(prec), gf_fp32_matmul(), flop / 1e9, 1e3 * total, flop / total / 1e9);
    gf_set_matmul_precision(GF_PRECISION_FP32);
    free(A), free(B), free(C);
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    const int64_t N = 4096, C = 128, F = 512, nf = N * F, nc = N * C;
    float *h = filled(nf, 1000, 0.006f, -3.0f), *act = filled(nf, 7, 0.0f, 0.0f), *g = filled(nf, 77, 0.01f, 0.0f);
    float *x = filled(nc, 1000, 0.006f, -3.0f), *y = filled(nc, 3, 0.0f, 0.0f), *dy = filled(nc, 77, 0.01f, 0.0f);
    float *dx = filled(nc, 3, 0.0f, 0.0f), *w = filled(C, 100, 0.01f, 1.0f), *b = filled(C, 1, 0.0f, 0.1f);
    float *dw = filled(C, 1, 0.0f, 0.0f), *db = filled(C, 1, 0.0f, 0.0f), *mean = filled(N, 1, 0.0f, 0.0f);
    float *rstd = filled(N, 1, 0.0f, 0.0f);
    float *keep = filled(nf, 1, 0.0f, 0.0f);
    enum { NOPS = 6 };
    double t[NOPS];
    for (int i = 0; i < NOPS; i++) t[i] = 1e9;
#define TIME(i, call)                                                                                      \
    do {                                                                                                   \
        double s_ = gf_clock_s();                                                                                 \
        call;                                                                                              \
        double e_ = gf_clock_s() - s_;                                                                            \
        t[i] = e_ < t[i] ? e_ : t[i];                                                                      \
    } while (0)
    for (int r = 0; r < reps; r++) {
        TIME(0, gf_gelu_forward(act, h, nf, GF_GELU_ERF));
        TIME(1, gf_gelu_backward(g, h, g, nf, GF_GELU_ERF));
        TIME(2, gf_gelu_forward_keep(act, keep, h, nf, GF_GELU_ERF));
        TIME(3, gf_gelu_backward_kept(g, h, keep, g, nf, GF_GELU_ERF));
        TIME(4, gf_layernorm_forward(y, mean, rstd, x, w, b, N, C, 1e-5f));
        TIME(5, gf_layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C));
    }
    const char *what[NOPS] = {"GELU forward",     "GELU backward",     "GELU forward, keeping erf",
                              "GELU backward, erf kept", "LayerNorm forward", "LayerNorm backward"};
    const int64_t n[NOPS] = {nf, nf, nf, nf, nc, nc};
    for (int i = 0; i < NOPS; i++)
        printf("| %d | %s (%lld elements) | %.3f ms | %.2f ns |\n", gf_threads(), what[i], (long long)n[i], 1e3 * t[i],
               1e9 * t[i] / (double)n[i]);
    linear_layers(reps, GF_PRECISION_FP32);
    linear_layers(reps, GF_PRECISION_FP32_FAST);
    return 0;
}
