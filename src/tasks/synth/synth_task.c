/* Synthetic sequence pairs (task synth, issue 52): what attention is for, generated from a seed. --corpus
 * names the task: reverse (the digits backwards), sort (the digits in order) or add (a+b, the digits of the
 * sum). Train and valid have sources of 1 .. train_len digits (add: numbers of 1 .. train_len / 2 digits each);
 * test has longer ones, train_len + 1 .. 2 train_len (add: up to train_len digits each), to show who
 * generalises past the lengths it was trained on. Source ids: the digits 0-9 and + (10); the target is digits
 * through a word tokenizer ("0" .. "9", then <eos> and <unk>), stored with every checkpoint. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/rng.h"
#include "plugin/schema.h"
#include "sources/seq2seq_source.h"
#include "tasks/task.h"

enum { SYNTH_SOURCE_VOCAB = 11, SYNTH_PLUS = 10, SYNTH_MAX_LEN = 64 };

typedef struct {
    int64_t train_len, examples, data_seed;
} synth_options;

static const gf_cfg_key SYNTH_KEYS[] = {
    {.name = "train_len", .type = GF_KEY_INT, .off = offsetof(synth_options, train_len), .lo = 2, .hi = SYNTH_MAX_LEN / 2,
     .def = "8", .help = "the longest source of train and valid; test's are train_len + 1 .. 2 train_len"},
    {.name = "examples", .type = GF_KEY_INT, .off = offsetof(synth_options, examples), .lo = 10, .hi = 10000000,
     .def = "20000", .help = "training examples (valid and test: a twentieth each, at least 100)"},
    {.name = "data_seed", .type = GF_KEY_INT, .off = offsetof(synth_options, data_seed), .lo = 0, .hi = 1 << 30,
     .def = "1", .help = "the examples' seed (the training order has its own, --seed)"},
};

static const char *const KINDS[] = {"reverse", "sort", "add", NULL};

typedef struct {
    int kind;
    gf_tokenizer *tok;          /* the digits' vocabulary made here (NULL when a checkpoint's is given) */
    const gf_tokenizer *use;    /* the one read with: tok or the checkpoint's */
    int32_t eos;
    int64_t n[3];
    int32_t *src[3], *tgt[3];
    int64_t *ss[3], *ts[3];
} synth_data;

static void synth_free(void *data) {
    synth_data *d = data;
    if (!d) return;
    gf_tokenizer_free(d->tok);
    for (int s = 0; s < 3; s++) free(d->src[s]), free(d->tgt[s]), free(d->ss[s]), free(d->ts[s]);
    free(d);
}

static int kind_of(const char *corpus) {
    for (int k = 0; KINDS[k]; k++)
        if (!strcmp(corpus, KINDS[k])) return k;
    return -1;
}

static int cmp_i32(const void *a, const void *b) { return (*(const int32_t *)a > *(const int32_t *)b) - (*(const int32_t *)a < *(const int32_t *)b); }

/* Example i of a split whose sources run lo .. hi digits: its source at src (*ls) and target at tgt (*lt). */
static void make_example(int kind, uint64_t key, int64_t i, int64_t lo, int64_t hi, int32_t *src, int64_t *ls,
                         int32_t *tgt, int64_t *lt) {
    uint64_t c = (uint64_t)i * 1024;
    const int64_t n = lo + (int64_t)(gf_rand64(key, c++) % (uint64_t)(hi - lo + 1));
    if (kind != 2) {
        for (int64_t k = 0; k < n; k++) src[k] = (int32_t)(gf_rand64(key, c++) % 10);
        for (int64_t k = 0; k < n; k++) tgt[k] = kind == 0 ? src[n - 1 - k] : src[k];
        if (kind == 1) qsort(tgt, (size_t)n, sizeof *tgt, cmp_i32);
        *ls = *lt = n;
        return;
    }
    const int64_t na = (n + 1) / 2, nb = n - na > 0 ? n - na : 1; /* a + b: their digits, most significant first */
    int32_t a[SYNTH_MAX_LEN], b[SYNTH_MAX_LEN], sum[SYNTH_MAX_LEN + 1];
    for (int64_t k = 0; k < na; k++) a[k] = (int32_t)(gf_rand64(key, c++) % 10);
    for (int64_t k = 0; k < nb; k++) b[k] = (int32_t)(gf_rand64(key, c++) % 10);
    int64_t m = 0, carry = 0;
    for (int64_t k = 0; k < (na > nb ? na : nb); k++) { /* the sum's digits, least significant first */
        const int64_t v = (k < na ? a[na - 1 - k] : 0) + (k < nb ? b[nb - 1 - k] : 0) + carry;
        sum[m++] = (int32_t)(v % 10), carry = v / 10;
    }
    if (carry) sum[m++] = (int32_t)carry;
    while (m > 1 && sum[m - 1] == 0) m--; /* no leading zeros in the sum (the numbers may have them) */
    *ls = 0;
    for (int64_t k = 0; k < na; k++) src[(*ls)++] = a[k];
    src[(*ls)++] = SYNTH_PLUS;
    for (int64_t k = 0; k < nb; k++) src[(*ls)++] = b[k];
    for (int64_t k = 0; k < m; k++) tgt[k] = sum[m - 1 - k];
    *lt = m;
}

/* Split s's examples into d: count of them, sources lo .. hi digits long. */
static int make_split(synth_data *d, int s, const synth_options *o, int64_t count, int64_t lo, int64_t hi) {
    const int64_t cap = hi + 2;
    d->n[s] = count;
    d->src[s] = malloc((size_t)(count * cap) * sizeof(int32_t)), d->tgt[s] = malloc((size_t)(count * cap) * sizeof(int32_t));
    d->ss[s] = malloc((size_t)(count + 1) * sizeof(int64_t)), d->ts[s] = malloc((size_t)(count + 1) * sizeof(int64_t));
    if (!d->src[s] || !d->tgt[s] || !d->ss[s] || !d->ts[s]) return gf_fail("out of memory for %lld examples", (long long)count);
    const uint64_t key = gf_key(gf_key((uint64_t)o->data_seed, (uint64_t)d->kind), (uint64_t)s);
    d->ss[s][0] = d->ts[s][0] = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t ls, lt;
        make_example(d->kind, key, i, lo, hi, d->src[s] + d->ss[s][i], &ls, d->tgt[s] + d->ts[s][i], &lt);
        d->ss[s][i + 1] = d->ss[s][i] + ls, d->ts[s][i + 1] = d->ts[s][i] + lt;
    }
    return 0;
}

static int synth_load(const gf_task_env *e, const void *options, void **data) {
    const synth_options *o = options;
    if (e->tokenizer && e->tokenizer[0])
        return gf_fail("--tokenizer %s: task synth's examples are digits; it takes no tokenizer", e->tokenizer);
    const int kind = kind_of(e->corpus);
    if (kind < 0) return gf_fail("--corpus %s: task synth makes reverse, sort or add; expected one of those", e->corpus);
    synth_data *d = calloc(1, sizeof *d);
    if (!d) return gf_fail("out of memory");
    d->kind = kind;
    d->tok = e->fixed ? NULL : gf_tokenizer_build(GF_TOK_WORD, "0 1 2 3 4 5 6 7 8 9", 19);
    const gf_tokenizer *tok = d->use = e->fixed ? e->fixed : d->tok;
    const int64_t held = o->examples / 20 > 100 ? o->examples / 20 : 100, L = o->train_len;
    int rc = tok ? 0 : -1;
    for (int32_t v = 0; !rc && v < 10; v++) { /* a checkpoint's tokenizer: digit v is id v */
        char p[2] = {(char)('0' + v), 0};
        if (gf_tokenizer_find(tok, p, 1) != v) rc = gf_fail("task synth: the checkpoint's vocabulary is not the digits");
    }
    if (!rc) d->eos = gf_tokenizer_eos_id(tok);
    if (!rc) rc = make_split(d, GF_TRAIN, o, o->examples, 1, L);
    if (!rc) rc = make_split(d, GF_VALID, o, held, 1, L);
    if (!rc) rc = make_split(d, GF_TEST, o, held, L + 1, 2 * L);
    if (rc) {
        synth_free(d);
        return -1;
    }
    *data = d;
    return 0;
}

static const gf_tokenizer *synth_tokenizer(const void *data) { return ((const synth_data *)data)->use; }

static int synth_configure(const void *data, const void *options, gf_config *cfg) {
    const synth_options *o = options; /* the longest: test's sources, and a sum's digits with the end */
    return gf_seq2seq_configure(cfg, "synth", SYNTH_SOURCE_VOCAB, data ? gf_tokenizer_vocab_size(synth_tokenizer(data)) : 0,
                                2 * o->train_len + 2);
}

static gf_source *synth_source(const void *data, int split, const void *options, uint64_t seed) {
    (void)options;
    const synth_data *d = data;
    static const char *const NAMES[3] = {"synth train", "synth valid", "synth test"};
    const gf_seq2seq_pairs p = {.n = d->n[split], .src = d->src[split], .tgt = d->tgt[split], .src_start = d->ss[split],
                                .tgt_start = d->ts[split], .source_vocab = SYNTH_SOURCE_VOCAB,
                                .target_vocab = gf_tokenizer_vocab_size(synth_tokenizer(d)), .bos = d->eos,
                                .eos = d->eos, .name = NAMES[split]};
    return gf_seq2seq_source_create(&p, seed);
}

static void synth_describe(const void *data, char *buf, size_t n) {
    const synth_data *d = data;
    snprintf(buf, n, "%s: %lld train examples (valid %lld at the same lengths, test %lld longer)", KINDS[d->kind],
             (long long)d->n[0], (long long)d->n[1], (long long)d->n[2]);
}

static int synth_owns(const char *corpus, const char *data_dir) {
    (void)data_dir;
    return kind_of(corpus) >= 0;
}

/* A line of digits (and + for add) into source ids: predict's input. */
static int synth_source_ids(const void *options, const char *text, size_t n, const char *what, int32_t **ids,
                            int64_t *len) {
    (void)options;
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r')) n--;
    if (n == 0 || n > SYNTH_MAX_LEN)
        return gf_fail("%s: %zu characters; expected 1 to %d digits (and + for add)", what, n, SYNTH_MAX_LEN);
    for (size_t i = 0; i < n; i++)
        if (text[i] != '+' && (text[i] < '0' || text[i] > '9'))
            return gf_fail("%s: character %zu is not a digit or +", what, i + 1);
    *ids = malloc(n * sizeof **ids);
    if (!*ids) return gf_fail("out of memory");
    for (size_t i = 0; i < n; i++) (*ids)[i] = text[i] == '+' ? SYNTH_PLUS : text[i] - '0';
    *len = (int64_t)n;
    return 0;
}

const gf_task_ops gf_task_synth = {
    .version = GF_TASK_OPS_VERSION, .name = "synth",
    .help = "synthetic sequence pairs (reverse, sort, add) on an encoder-decoder; test longer than trained",
    .metric = "ppl", .unit = "tok", .counted = "tokens", .options_size = sizeof(synth_options), .keys = SYNTH_KEYS,
    .n_keys = (int)(sizeof SYNTH_KEYS / sizeof SYNTH_KEYS[0]), .load = synth_load, .tokenizer = synth_tokenizer,
    .configure = synth_configure, .source = synth_source, .describe = synth_describe, .owns = synth_owns,
    .free = synth_free, .source_ids = synth_source_ids,
    .data_help = "--corpus reverse | sort | add, made from the task's data seed (train option data_seed); test's\n"
                 "sources are longer than training's\n"};
