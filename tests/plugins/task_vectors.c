/* A task added from this file alone: no line of the library or of the command-line tool names it, nor its
 * metric (an error rate, lower is better: gf_task_ops.score_by). It is
 * registered (gf_task_register) before main runs, linked into a build of the grassflow command
 * (build/tests/grassflow-vectors), and trained, evaluated and resumed through the commands' generic paths
 * by tests/cli/task_plugin.sh.
 *
 * The task "vectors": classify sequences of float vectors read from text files. The corpus is a directory
 * with train.txt, valid.txt and test.txt; each starts with a line "classes: NAME NAME ..." and then has one
 * sequence a line, "NAME x x x ...": its class, then T x dim numbers (dim: the task's option --dim; every
 * sequence of a file has the same T). No tokenizer: the model reads the vectors (input "vectors"). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

typedef struct {
    int64_t dim;
} vec_options;

static const gf_cfg_key VEC_KEYS[] = {
    {.name = "dim", .type = GF_KEY_INT, .off = offsetof(vec_options, dim), .lo = 1, .hi = 4096, .def = "4",
     .help = "the numbers of each vector"},
};

enum { MAX_CLASSES = 16, MAX_LINE = 1 << 16 };

typedef struct {
    int64_t n, T;            /* sequences, positions */
    float *x;                /* (n, T, dim) */
    int32_t *y;              /* (n) */
} vec_split;

typedef struct {
    int n_classes;
    char names[MAX_CLASSES][32];
    int64_t dim;
    vec_split split[3];
} vec_data;

static void vec_free(void *data) {
    vec_data *d = data;
    for (int s = 0; d && s < 3; s++) free(d->split[s].x), free(d->split[s].y);
    free(d);
}

/* "classes: a b c" (every file says the same). */
static int read_classes(vec_data *d, char *line, const char *path) {
    int n = 0;
    char names[MAX_CLASSES][32] = {{0}};
    if (strncmp(line, "classes:", 8)) return gf_fail("%s: line 1 is not \"classes: NAME NAME ...\"", path);
    for (char *t = strtok(line + 8, " \t\n"); t; t = strtok(NULL, " \t\n")) {
        if (n == MAX_CLASSES || strlen(t) >= 32) return gf_fail("%s: at most %d classes of 31 bytes", path, MAX_CLASSES);
        snprintf(names[n++], 32, "%s", t);
    }
    if (n < 2) return gf_fail("%s: %d classes; expected 2 or more", path, n);
    if (d->n_classes && (d->n_classes != n || memcmp(names, d->names, sizeof names)))
        return gf_fail("%s: its classes are not those of the other splits", path);
    d->n_classes = n;
    memcpy(d->names, names, sizeof names);
    return 0;
}

/* One line "NAME x x ..." appended to sp. */
static int read_row(vec_data *d, vec_split *sp, char *line, const char *path, int64_t lineno) {
    char *t = strtok(line, " \t\n");
    int y = -1;
    for (int c = 0; t && c < d->n_classes; c++)
        if (!strcmp(t, d->names[c])) y = c;
    if (y < 0) return gf_fail("%s:%lld: the class %s is not one of the file's classes", path, (long long)lineno, t ? t : "");
    float buf[4096];
    int64_t k = 0;
    for (t = strtok(NULL, " \t\n"); t && k < 4096; t = strtok(NULL, " \t\n")) buf[k++] = strtof(t, NULL);
    if (k == 0 || k % d->dim) return gf_fail("%s:%lld: %lld numbers; expected T x --dim %lld", path, (long long)lineno,
                                             (long long)k, (long long)d->dim);
    if (sp->n && k != sp->T * d->dim) return gf_fail("%s:%lld: a sequence of another length", path, (long long)lineno);
    sp->T = k / d->dim;
    float *x = realloc(sp->x, (size_t)((sp->n + 1) * k) * sizeof(float));
    int32_t *yy = realloc(sp->y, (size_t)(sp->n + 1) * sizeof(int32_t));
    if (x) sp->x = x;
    if (yy) sp->y = yy;
    if (!x || !yy) return gf_fail("out of memory");
    memcpy(sp->x + sp->n * k, buf, (size_t)k * sizeof(float));
    sp->y[sp->n++] = y;
    return 0;
}

static int read_split(vec_data *d, const char *dir, int s) {
    static const char *const files[3] = {"train.txt", "valid.txt", "test.txt"};
    char path[GF_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, files[s]);
    FILE *f = fopen(path, "r");
    if (!f) return gf_fail("%s: cannot open it; the vectors task reads DIR/train.txt, valid.txt and test.txt", path);
    static char line[MAX_LINE];
    int rc = fgets(line, sizeof line, f) ? read_classes(d, line, path) : gf_fail("%s: empty", path);
    for (int64_t ln = 2; !rc && fgets(line, sizeof line, f); ln++) rc = read_row(d, &d->split[s], line, path, ln);
    fclose(f);
    if (!rc && d->split[s].n == 0) rc = gf_fail("%s: no sequence", path);
    return rc;
}

static int vec_load(const gf_task_env *e, const void *options, void **data) {
    vec_data *d = calloc(1, sizeof *d);
    if (!d) return gf_fail("out of memory");
    d->dim = ((const vec_options *)options)->dim;
    for (int s = 0; s < 3; s++)
        if ((e->splits & (1u << s)) && read_split(d, e->corpus, s)) {
            vec_free(d);
            return -1;
        }
    *data = d;
    return 0;
}

/* A classifier of input vectors of --dim numbers, with the data's classes. */
static int vec_configure(const void *data, const void *options, gf_config *cfg) {
    char kv[3][64];
    snprintf(kv[0], sizeof kv[0], "d_input=%lld", (long long)((const vec_options *)options)->dim);
    snprintf(kv[1], sizeof kv[1], "task=classify");
    snprintf(kv[2], sizeof kv[2], "input=vectors");
    for (int i = 0; i < 3; i++)
        if (gf_config_set(cfg, kv[i])) return -1;
    if (!data) return 0;
    snprintf(kv[0], sizeof kv[0], "head.n_classes=%d", ((const vec_data *)data)->n_classes);
    return gf_config_set(cfg, kv[0]);
}

/* ---- the source: sequence i of a split, in an order shuffled per epoch ---------------------------------- */

typedef struct {
    gf_source base;
    const vec_split *sp;
    int64_t dim;
    uint64_t seed;
    int64_t *perm, perm_epoch;
    float *x;
    int32_t *y;
} vec_source;

static int64_t vs_n(void *ctx) { return ((vec_source *)ctx)->sp->n; }

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int vs_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    vec_source *s = ctx;
    const int64_t N = s->sp->n, row = s->sp->T * s->dim;
    if (s->perm_epoch != epoch) { /* Fisher-Yates keyed by (seed, epoch) */
        for (int64_t i = 0; i < N; i++) s->perm[i] = i;
        for (int64_t i = N - 1; i > 0; i--) {
            const int64_t j = (int64_t)(mix64(s->seed * 1000003u + (uint64_t)epoch * 7919u + (uint64_t)i) % (uint64_t)(i + 1));
            const int64_t t = s->perm[i];
            s->perm[i] = s->perm[j], s->perm[j] = t;
        }
        s->perm_epoch = epoch;
    }
    for (int64_t k = 0; k < n; k++) {
        const int64_t i = epoch < 0 ? first + k : s->perm[first + k];
        memcpy(s->x + k * row, s->sp->x + i * row, (size_t)row * sizeof(float));
        s->y[k] = s->sp->y[i];
    }
    *b = (gf_batch){.B = n, .T = s->sp->T, .vectors = s->x, .targets = s->y, .n_targets = n};
    return 0;
}

/* Evaluation: the split in file order. */
static int vs_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) { return vs_fill(ctx, -1, first, n, b); }

static void vs_destroy(gf_source *src) {
    vec_source *s = (vec_source *)src;
    free(s->perm), free(s->x), free(s->y), free(s);
}

static gf_source *vec_source_make(const void *data, int split, const void *options, uint64_t seed) {
    (void)options;
    const vec_data *d = data;
    const vec_split *sp = &d->split[split];
    vec_source *s = calloc(1, sizeof *s);
    if (!s) return gf_fail("out of memory"), NULL;
    *s = (vec_source){.sp = sp, .dim = d->dim, .seed = seed, .perm_epoch = -2,
                      .perm = malloc((size_t)sp->n * sizeof(int64_t)),
                      .x = malloc((size_t)(sp->n * sp->T * d->dim) * sizeof(float)),
                      .y = malloc((size_t)sp->n * sizeof(int32_t))};
    s->base = (gf_source){.version = GF_SOURCE_VERSION, .ctx = s, .n_examples = vs_n, .fill = vs_fill,
                          .n_eval_examples = vs_n, .fill_eval = vs_fill_eval, .destroy = vs_destroy};
    if (!s->perm || !s->x || !s->y) {
        vs_destroy(&s->base);
        return gf_fail("out of memory"), NULL;
    }
    return &s->base;
}

static void vec_describe(const void *data, char *buf, size_t n) {
    const vec_data *d = data;
    snprintf(buf, n, "%lld train sequences of %lld vectors of %lld, %d classes", (long long)d->split[0].n,
             (long long)d->split[0].T, (long long)d->dim, d->n_classes);
}

static const char *vec_label(const void *data, int64_t i) {
    const vec_data *d = data;
    return i >= 0 && i < d->n_classes ? d->names[i] : NULL;
}

/* The task's own metric: the share of sequences classified wrong, lower is better. train picks its best
 * checkpoint by it and --patience counts by it; eval, compare and plot report it. */
static double error_rate(const gf_eval_result *r) {
    return r->n_correct >= 0 && r->n_counted > 0 ? 1.0 - (double)r->n_correct / (double)r->n_counted : NAN;
}
static const gf_metric ERROR_RATE = {.name = "error_rate", .key = "err", .title = "error rate",
                                     .higher_is_better = false, .by_loss = false, .relative_gap = false,
                                     .decimals = 4, .lo = 0.0, .hi = 1.0, .score = error_rate};

static const gf_task_ops VECTORS = {
    .version = GF_TASK_OPS_VERSION, .name = "vectors", .help = "sequences of float vectors, one class each",
    .metric = "error_rate", .unit = "seq", .counted = "sequences", .options_size = sizeof(vec_options),
    .keys = VEC_KEYS, .n_keys = 1, .load = vec_load, .configure = vec_configure, .source = vec_source_make,
    .describe = vec_describe, .label = vec_label, .free = vec_free, .score_by = &ERROR_RATE};

__attribute__((constructor)) static void register_vectors(void) {
    if (gf_task_register(&VECTORS)) {
        fprintf(stderr, "task_vectors: %s\n", gf_last_error());
        exit(3);
    }
}
