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
 * tests/train/fixtures.sh builds 0.1.0 from git, records with it, and runs this build with --expect: the same
 * bits as the old code on the same machine. The training-state fixture (run-step3/) is resumed there too.
 *
 * tests/fixtures/v2/ holds files of grassflow 0.2.0 (commit 3bfceb1; config format 2: the head's kind as
 * "task"; recipes with seq_len and max_sent among the trainer's keys): a next-token model, a classifier
 * with token types, and a training run (run-step3/ resumes to run-final-last), each recorded by 0.2.0 on an
 * Intel Xeon with OpenBLAS's SkylakeX kernel and held to that recording within 1e-5. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

typedef struct {
    const char *dir;  /* tests/fixtures/v1/ (0.1.0, config format 1) or v2/ (0.2.0, format 2) */
    const char *name;
    int64_t B, T; /* T past max_len (32) where positions allow it */
} fixture;

static const fixture FIXTURES[] = {
    {"v1", "grassmann-pre", 2, 32},
    {"v1", "hybrid-post-extra-sin", 2, 45},
    {"v1", "transformer-untied-tanh-nopos", 2, 40},
    {"v1", "grassmann-sched-rank3-post", 2, 30},
    {"v1", "run-final-last", 3, 16},
#ifdef GF_CONFIG_FORMAT /* a library that reads format 2 (built against 0.1.0, the recorder has v1 only) */
    {"v2", "hybrid-sin-lm", 2, 40},
    {"v2", "classify-segments", 3, 12},
    {"v2", "run-final-last", 3, 16},
#endif
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

#ifdef GF_CONFIG_FORMAT
/* The batch's forward: a next-token model's targets (B, T); a classifier's, one label per row (the first B
 * targets, each modulo C) with token types 0, then 1, when it has them. Returns the rows of logits, *cols
 * their width. */
static int64_t forward(gf_model *m, const fixture *fx, int32_t *in, int32_t *tg, float *loss, int64_t *cols) {
    const int64_t n = fx->B * fx->T, C = gf_model_n_outputs(m);
    *cols = C;
    const bool lm = gf_model_predicts_next_token(m);
    uint8_t *seg = talloc((size_t)n);
    for (int64_t i = 0; i < n; i++) seg[i] = (uint8_t)(gf_model_config(m)->segments > 1 && i % fx->T >= fx->T / 2);
    for (int64_t i = 0; !lm && i < fx->B; i++) tg[i] = (int32_t)(i % C);
    const gf_batch b = {.B = fx->B, .T = fx->T, .ids = in, .targets = tg, .segments = seg};
    return gf_model_forward_batch(m, &b, loss) ? -1 : lm ? n : fx->B;
}
#else /* 0.1.0's API (language models only) */
static int64_t forward(gf_model *m, const fixture *fx, int32_t *in, int32_t *tg, float *loss, int64_t *cols) {
    *cols = gf_model_config(m)->vocab_size;
    return gf_model_forward(m, in, tg, fx->B, fx->T, loss) ? -1 : fx->B * fx->T;
}
#endif

/* The logits and loss (rows x outputs + 1 floats) of the fixture's batch. */
static float *fixture_values(const fixture *fx, int64_t *n_out) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/%s/%s.safetensors", fx->dir, fx->name);
    gf_model *m = gf_model_load(path);
    if (!m) fail_msg("%s: %s", path, gf_last_error());
    const int64_t V = gf_model_config(m)->vocab_size, n = fx->B * fx->T;
    int32_t *in = talloc((size_t)n * sizeof *in), *tg = talloc((size_t)n * sizeof *tg);
    batch_ids(in, tg, n, V);
    float loss;
    int64_t C;
    const int64_t rows = forward(m, fx, in, tg, &loss, &C);
    if (rows < 0) fail_msg("%s: forward: %s", path, gf_last_error());
    float *got = falloc(rows * C + 1);
    memcpy(got, gf_model_logits(m), (size_t)(rows * C) * sizeof(float));
    got[rows * C] = loss;
    gf_model_free(m);
    *n_out = rows * C + 1;
    return got;
}

static void check_fixture(const fixture *fx) {
    int64_t n;
    float *got = fixture_values(fx, &n);
    char want_path[1024];
    const char *dir = record_dir ? record_dir : expect_dir;
    if (dir) snprintf(want_path, sizeof want_path, "%s/%s-%s.bin", dir, fx->dir, fx->name);
    /* an old build records what it can read: a fixture of a later format is held to its recording */
    const bool exact = expect_dir && access(want_path, F_OK) == 0;
    if (!record_dir && !exact)
        snprintf(want_path, sizeof want_path, "tests/fixtures/%s/%s.recorded.bin", fx->dir, fx->name);
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
        bool ok = exact ? !memcmp(&got[i], &want[i], sizeof(float))
                        : fabsf(got[i] - want[i]) <= 1e-5f * fmaxf(1.0f, fabsf(want[i]));
        if (!ok)
            fail_msg("%s/%s: %s %lld is %.9g, %s %.9g", fx->dir, fx->name, i == n - 1 ? "the loss" : "logit",
                     (long long)i, (double)got[i], exact ? "the old code gave" : "the recording has", (double)want[i]);
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
