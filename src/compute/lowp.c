/* The table of low-precision weight copies (see lowp.h). */
#include "compute/lowp.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/error.h"
#include "compute/quant.h"

#define N_MATS 1024
static gf_lowp_mat g_mats[N_MATS];
static int g_n; /* entries in use (published with release order) */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

int gf_lowp_add(const gf_lowp_mat *m) {
    const bool int8 = m->kind == GF_WEIGHTS_INT8;
    if (!m->w || m->rows < 1 || m->cols < 1 || (int8 ? !m->u8 || !m->scale || m->cols > GF_LOWP_MAX_COLS : !m->h) ||
        (m->kind != GF_WEIGHTS_INT8 && m->kind != GF_WEIGHTS_BF16))
        return gf_fail("internal error: a malformed low-precision matrix (%lld x %lld)", (long long)m->rows,
                       (long long)m->cols);
    pthread_mutex_lock(&g_lock);
    const int n = g_n;
    if (n < N_MATS) g_mats[n] = *m;
    if (n < N_MATS) __atomic_store_n(&g_n, n + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return n < N_MATS ? 0 : gf_fail("more than %d low-precision weight matrices in one process", N_MATS);
}

void gf_lowp_remove(const float *lo, const float *hi) {
    pthread_mutex_lock(&g_lock);
    int k = 0;
    for (int i = 0; i < g_n; i++)
        if (!(g_mats[i].w >= lo && g_mats[i].w < hi)) g_mats[k++] = g_mats[i];
    __atomic_store_n(&g_n, k, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
}

/* A per-thread buffer for the quantized input. */
static int8_t *input_room(int64_t n) {
    static _Thread_local int8_t *buf;
    static _Thread_local int64_t cap;
    if (cap >= n) return buf;
    free(buf);
    buf = malloc((size_t)n);
    cap = buf ? n : 0;
    return buf;
}

bool gf_lowp_gemv(const float *B, int64_t ldb, int64_t N, int64_t K, const float *a, float alpha, float beta,
                  float *C) {
    const int n = __atomic_load_n(&g_n, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        const gf_lowp_mat *m = &g_mats[i];
        if (B < m->w || B >= m->w + m->rows * m->cols) continue;
        const int64_t at = B - m->w, r0 = at / m->cols, c0 = at % m->cols;
        if (ldb != m->cols || r0 + N > m->rows || c0 + K > m->cols) return false; /* not a block of it */
        if (m->kind == GF_WEIGHTS_BF16) {
            gf_gemv_bf16(m->h + at, m->cols, N, K, a, alpha, beta, C);
            return true;
        }
        int8_t *qx = input_room(K);
        if (!qx) return false;
        gf_gemv_int8(m->u8 + at, m->cols, m->scale + r0, N, K, a, alpha, beta, C, qx);
        return true;
    }
    return false;
}
