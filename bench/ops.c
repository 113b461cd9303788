/* The elementwise ops of a small Transformer's training step, timed alone: GELU (erf) forward and backward
 * over the d_ff activations and LayerNorm forward and backward over the d_model rows of one batch of the
 * character-level benchmark (B 16 x L 256 = 4,096 rows, d 128, d_ff 512). Best of REPS calls each, in ms
 * and ns per element. bash bench/ops.sh builds it against build/libgrassflow.a and runs it with 1 and 2
 * threads; the same command on two builds (BUILD=...) compares them. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "grassflow.h"
#include "ops/ops.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(int64_t n, int mod, float step, float off) {
    float *x = malloc((size_t)n * sizeof(float));
    if (!x) exit(1);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % mod) * step + off;
    return x;
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 30;
    const int64_t N = 4096, C = 128, F = 512, nf = N * F, nc = N * C;
    float *h = filled(nf, 1000, 0.006f, -3.0f), *act = filled(nf, 7, 0.0f, 0.0f), *g = filled(nf, 77, 0.01f, 0.0f);
    float *x = filled(nc, 1000, 0.006f, -3.0f), *y = filled(nc, 3, 0.0f, 0.0f), *dy = filled(nc, 77, 0.01f, 0.0f);
    float *dx = filled(nc, 3, 0.0f, 0.0f), *w = filled(C, 100, 0.01f, 1.0f), *b = filled(C, 1, 0.0f, 0.1f);
    float *dw = filled(C, 1, 0.0f, 0.0f), *db = filled(C, 1, 0.0f, 0.0f), *mean = filled(N, 1, 0.0f, 0.0f);
    float *rstd = filled(N, 1, 0.0f, 0.0f);
    double t[4] = {1e9, 1e9, 1e9, 1e9};
    for (int r = 0; r < reps; r++) {
        double s = now();
        gf_gelu_forward(act, h, nf, GF_GELU_ERF);
        double e = now();
        t[0] = e - s < t[0] ? e - s : t[0];
        s = now();
        gf_gelu_backward(g, h, g, nf, GF_GELU_ERF);
        e = now();
        t[1] = e - s < t[1] ? e - s : t[1];
        s = now();
        gf_layernorm_forward(y, mean, rstd, x, w, b, N, C, 1e-5f);
        e = now();
        t[2] = e - s < t[2] ? e - s : t[2];
        s = now();
        gf_layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, N, C);
        e = now();
        t[3] = e - s < t[3] ? e - s : t[3];
    }
    const char *what[] = {"GELU forward", "GELU backward", "LayerNorm forward", "LayerNorm backward"};
    const int64_t n[] = {nf, nf, nc, nc};
    for (int i = 0; i < 4; i++)
        printf("| %d | %s (%lld elements) | %.3f ms | %.2f ns |\n", gf_threads(), what[i], (long long)n[i], 1e3 * t[i],
               1e9 * t[i] / (double)n[i]);
    return 0;
}
