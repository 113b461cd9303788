/* The SNLI task: sentence pairs ([CLS] premise [SEP] hypothesis [SEP], BERT WordPiece) with one of three
 * labels, scored by accuracy. The data is read by data/nli_reader.h, the examples made by sources/nli_source.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/task.h"
#include "core/error.h"
#include "data/corpus.h"
#include "io/file.h"
#include "sources/nli_source.h"

typedef struct {
    gf_nli_data *d;
    gf_tokenizer *own;         /* the recipe's WordPiece vocabulary (NULL when a fixed one is borrowed) */
    const gf_tokenizer *tok;
} snli_data;

static void snli_free(void *data) {
    snli_data *s = data;
    if (!s) return;
    gf_nli_free(s->d);
    gf_tokenizer_free(s->own);
    free(s);
}

/* --tokenizer wordpiece:FILE, or the BERT vocabulary grassflow ships. */
static gf_tokenizer *recipe_tokenizer(const gf_train_opts *o) {
    if (o->tokenizer[0] && strncmp(o->tokenizer, "wordpiece:", 10)) {
        gf_fail("--tokenizer %s: sentence pairs are read as BERT reads them; expected wordpiece:VOCAB_FILE (a BERT "
                "vocab.txt), or no --tokenizer for data/bert-base-uncased/vocab.txt", o->tokenizer);
        return NULL;
    }
    char path[GF_PATH_MAX];
    if (o->tokenizer[0]) return gf_wordpiece_load(o->tokenizer + 10);
    if (gf_path_join(path, sizeof path, cli_data_dir(), "bert-base-uncased/vocab.txt")) return NULL;
    return gf_wordpiece_load(path);
}

/* The splits of the mask (1 << GF_TRAIN ...), and the tokenizer. */
static int load_splits(const gf_train_opts *o, const gf_tokenizer *fixed, unsigned splits, void **data) {
    snli_data *s = calloc(1, sizeof *s);
    if (!s) return cli_error("out of memory");
    s->d = gf_nli_load_splits(o->corpus, cli_data_dir(), splits);
    if (s->d && !fixed) s->own = recipe_tokenizer(o);
    s->tok = fixed ? fixed : s->own;
    if (!s->d || !s->tok) {
        snli_free(s);
        return cli_error("%s", gf_last_error());
    }
    *data = s;
    return EXIT_OK;
}

static int snli_load(const gf_train_opts *o, bool no_cache, const gf_tokenizer *fixed, void **data) {
    (void)no_cache; /* pairs are read and tokenized in about a second; there is no cache */
    return load_splits(o, fixed, 7u, data);
}

static int snli_load_split(const gf_train_opts *o, const gf_tokenizer *fixed, int split, void **data) {
    return load_splits(o, fixed, 1u << split, data);
}

static const gf_tokenizer *snli_tokenizer(const void *data) { return ((const snli_data *)data)->tok; }

static int set(gf_config *cfg, const char *kv, char *said, size_t n) {
    if (gf_config_set(cfg, kv)) return cli_error("%s", gf_last_error());
    snprintf(said + strlen(said), n - strlen(said), " %s", kv);
    return EXIT_OK;
}

/* The n_classes of a classify config's head (0 if it has none). */
static int64_t n_classes(const gf_config *cfg) {
    char *js = gf_config_to_json(cfg, false);
    cJSON *o = js ? cJSON_Parse(js) : NULL;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "head"), "n_classes");
    int64_t v = cJSON_IsNumber(n) ? (int64_t)n->valuedouble : 0;
    cJSON_Delete(o);
    free(js);
    return v;
}

/* What snli_configure changes: vocab_size (kv), then a pair classifier with room for its examples. */
static int snli_structure(const gf_train_opts *o, gf_config *cfg, char *kv, size_t n_kv, char *said, size_t n_said) {
    int rc;
    if ((rc = set(cfg, kv, said, n_said))) return rc;
    if (!strcmp(cfg->task, "classify") && n_classes(cfg) != GF_NLI_CLASSES)
        return cli_error("--task snli: the model's classify head has n_classes %lld; SNLI has 3 labels (entailment, "
                         "neutral, contradiction)\nHINT: --set head.n_classes=3", (long long)n_classes(cfg));
    if (strcmp(cfg->task, "classify")) {
        if ((rc = set(cfg, "task=classify", said, n_said)) || (rc = set(cfg, "head.n_classes=3", said, n_said)) ||
            (rc = set(cfg, "direction=bidirectional", said, n_said)))
            return rc;
        if (cfg->segments == 0 && (rc = set(cfg, "segments=2", said, n_said))) return rc;
    }
    const int64_t longest = 2 * o->max_sent + 3;
    if (cfg->pos == GF_POS_LEARNED && cfg->max_len < longest) {
        snprintf(kv, n_kv, "max_len=%lld", (long long)longest);
        if ((rc = set(cfg, kv, said, n_said))) return rc;
    }
    return EXIT_OK;
}

/* A pair classifier over the WordPiece vocabulary: a language-model config (a preset) becomes a
 * bidirectional 3-way classifier with two token types; a classify config keeps its own choices. Says what
 * it changed (data NULL: a check before the data is read; the vocabulary is left as it is, silently). */
static int snli_configure(const void *data, const gf_train_opts *o, gf_config *cfg) {
    const snli_data *s = data;
    char kv[64], said[512] = "";
    int rc;
    char *before = gf_config_to_json(cfg, false);
    if (!before) return cli_error("out of memory");
    const int64_t vocab = s ? gf_tokenizer_vocab_size(s->tok) : cfg->vocab_size; /* a check: left as it is */
    snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)vocab);
    rc = snli_structure(o, cfg, kv, sizeof kv, said, sizeof said);
    char *after = rc ? NULL : gf_config_to_json(cfg, false);
    if (s && after && strcmp(before, after)) fprintf(stderr, "grassflow: snli: the model is set to%s\n", said);
    free(before);
    free(after);
    return rc;
}

static gf_source *snli_source(const void *data, int split, const gf_train_opts *o) {
    const snli_data *s = data;
    const gf_nli_split *sp = &s->d->split[split];
    const char *name = split == GF_TRAIN ? "train" : split == GF_VALID ? "dev" : "test";
    if (sp->n == 0) {
        gf_fail("the snli %s split (%s) has no pair to use (rows %lld: labelled - for no consensus %lld, with an empty "
                "sentence %lld); expected at least one labelled pair", name, sp->path,
                (long long)sp->rows, (long long)sp->unlabelled, (long long)sp->empty);
        return NULL;
    }
    gf_nli_source_stats st;
    gf_source *src = gf_nli_source_create(sp, s->tok, o->max_sent, o->seed, &st);
    if (src && st.truncated)
        fprintf(stderr, "grassflow: snli %s: %lld of %lld pairs have a sentence longer than --max-sent %lld pieces; "
                "cut to it\n", name, (long long)st.truncated, (long long)st.pairs, (long long)o->max_sent);
    return src;
}

static void snli_describe(const void *data, char *buf, size_t n) {
    const snli_data *s = data;
    snprintf(buf, n, "%lld train pairs (dev %lld, test %lld), WordPiece vocabulary %lld", (long long)s->d->split[0].n,
             (long long)s->d->split[1].n, (long long)s->d->split[2].n, (long long)gf_tokenizer_vocab_size(s->tok));
}

static const cli_task_flag SNLI_FLAGS[] = {
    {"--max-sent", "the WordPiece pieces kept of each sentence of a pair"},
    {"--backbone", "a pretrained checkpoint under a head stack (a pair classifier)"},
    {"--head", "the head stack on a --backbone"},
    {"--freeze-backbone", "train the head on a --backbone only"},
    {"--no-feature-cache", "run a frozen --backbone at every step"},
    {NULL, NULL}};

const cli_task cli_task_snli = {.name = "snli", .what = "sentence-pair classification (entailment, neutral, contradiction)",
                                .metric = "accuracy", .load = snli_load, .tokenizer = snli_tokenizer,
                                .configure = snli_configure, .source = snli_source, .describe = snli_describe,
                                .free = snli_free, .flags = SNLI_FLAGS, .load_split = snli_load_split};
