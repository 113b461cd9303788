/* Checkpoints written by earlier versions of grassflow still load and give the same numbers.
 *
 * tests/fixtures/v1/ holds checkpoints written by grassflow 0.1.0 (commit e72dcbf; config format 1: flat
 * keys, no "format" or "task") and, beside each, NAME.recorded.bin: the logits (B, T, V) and the loss
 * that 0.1.0 computed for the batch below, as raw float32, recorded once on an AMD EPYC with OpenBLAS's
 * Haswell kernel. The bits of a float computation depend on the BLAS kernel and on the code the compiler
 * made for the CPU, so:
 *   test_fixtures                  holds the logits to those recordings within 1e-5 (relative);
 *   test_fixtures --record DIR     writes this build's values to DIR/NAME.bin;
 *   test_fixtures --expect DIR     requires the same bits as DIR/NAME.bin.
 * tests/fixtures.sh builds 0.1.0 from git, records with it, and runs this build with --expect: the same
 * bits as the old code on the same machine. The training-state fixture (run-step3/) is resumed there too. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define FIXDIR "tests/fixtures/v1/"

typedef struct {
    const char *name;
    int64_t B, T; /* T past max_len (32) where positions allow it */
} fixture;

static const fixture FIXTURES[] = {
    {"grassmann-pre", 2, 32},
    {"hybrid-post-extra-sin", 2, 45},
    {"transformer-untied-tanh-nopos", 2, 40},
    {"grassmann-sched-rank3-post", 2, 30},
    {"run-final-last", 3, 16},
};

static const char *record_dir, *expect_dir;

/* Inputs and targets of the batch: deterministic ids, the last target of row 0 ignored. */
static void batch_ids(int32_t *in, int32_t *tg, int64_t n, int64_t V) {
    for (int64_t i = 0; i < n; i++) {
        in[i] = (int32_t)((i * 7 + 3) % V);
        tg[i] = (int32_t)((i * 5 + 1) % V);
    }
    tg[0] = -1;
}

/* The logits and loss (n V + 1 floats) of the fixture's batch. */
static float *fixture_values(const fixture *fx, int64_t *n_out) {
    char path[256];
    snprintf(path, sizeof path, FIXDIR "%s.safetensors", fx->name);
    gf_model *m = gf_model_load(path);
    if (!m) fail_msg("%s: %s", path, gf_last_error());
    const int64_t V = gf_model_config(m)->vocab_size, n = fx->B * fx->T;
    int32_t *in = talloc((size_t)n * sizeof *in), *tg = talloc((size_t)n * sizeof *tg);
    batch_ids(in, tg, n, V);
    float loss;
    if (gf_model_forward(m, in, tg, fx->B, fx->T, &loss)) fail_msg("%s: forward: %s", path, gf_last_error());
    float *got = falloc(n * V + 1);
    memcpy(got, gf_model_logits(m), (size_t)(n * V) * sizeof(float));
    got[n * V] = loss;
    gf_model_free(m);
    *n_out = n * V + 1;
    return got;
}

static void check_fixture(const fixture *fx) {
    int64_t n;
    float *got = fixture_values(fx, &n);
    char want_path[1024];
    const char *dir = record_dir ? record_dir : expect_dir;
    if (dir) snprintf(want_path, sizeof want_path, "%s/%s.bin", dir, fx->name);
    else snprintf(want_path, sizeof want_path, FIXDIR "%s.recorded.bin", fx->name);
    const size_t nb = (size_t)n * sizeof(float);
    if (record_dir) {
        FILE *f = fopen(want_path, "wb");
        if (!f || fwrite(got, 1, nb, f) != nb || fclose(f)) fail_msg("cannot write %s", want_path);
        return;
    }
    float *want = falloc(n + 1);
    FILE *f = fopen(want_path, "rb");
    if (!f) fail_msg("cannot open %s", want_path);
    size_t rd = fread(want, 1, nb + 1, f);
    fclose(f);
    if (rd != nb) fail_msg("%s: %zu bytes, expected %zu", want_path, rd, nb);
    for (int64_t i = 0; i < n; i++) {
        bool ok = expect_dir ? !memcmp(&got[i], &want[i], sizeof(float))
                             : fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i]));
        if (!ok)
            fail_msg("%s: %s %lld is %.9g, %s %.9g", fx->name, i == n - 1 ? "the loss" : "logit", (long long)i,
                     (double)got[i], expect_dir ? "the old code gave" : "the recording has", (double)want[i]);
    }
}

static void test_fixtures(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) check_fixture(&FIXTURES[i]);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--record")) record_dir = argv[2];
    else if (argc == 3 && !strcmp(argv[1], "--expect")) expect_dir = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: test_fixtures [--record DIR | --expect DIR]\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fixtures, pool_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    pool_release();
    return rc;
}
