/* The SNLI task: sentence pairs ([CLS] premise [SEP] hypothesis [SEP], BERT WordPiece) with one of three
 * labels, scored by accuracy. The data is read by tasks/snli/nli_reader.h, the examples made by tasks/snli/pair_source.h. */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tasks/snli/nli_reader.h"
#include "io/escape.h"
#include "io/file.h"
#include "plugin/schema.h"
#include "tasks/snli/pair_source.h"
#include "tasks/task.h"

typedef struct {
    int64_t max_sent;
} snli_options;

static const gf_cfg_key SNLI_KEYS[] = {
    {.name = "max_sent", .type = GF_KEY_INT, .off = offsetof(snli_options, max_sent), .lo = 1, .hi = 4096,
     .def = "48", .help = "the WordPiece pieces kept of each sentence of a pair (the paper: 48)"},
};

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
static gf_tokenizer *recipe_tokenizer(const gf_task_env *e) {
    const char *spec = e->tokenizer ? e->tokenizer : "";
    if (spec[0] && strncmp(spec, "wordpiece:", 10)) {
        gf_fail("--tokenizer %s: sentence pairs are read as BERT reads them; expected wordpiece:VOCAB_FILE (a BERT "
                "vocab.txt), or no --tokenizer for data/bert-base-uncased/vocab.txt", spec);
        return NULL;
    }
    char path[GF_PATH_MAX];
    if (spec[0]) return gf_wordpiece_load(spec + 10);
    if (gf_path_join(path, sizeof path, e->data_dir, "bert-base-uncased/vocab.txt")) return NULL;
    return gf_wordpiece_load(path);
}

/* The splits e asks for, and the tokenizer (pairs are read and tokenized in about a second: no cache). */
static int snli_load(const gf_task_env *e, const void *options, void **data) {
    (void)options;
    snli_data *s = calloc(1, sizeof *s);
    if (!s) return gf_fail("out of memory");
    s->d = gf_nli_load_first(e->corpus, e->data_dir, e->splits, e->max_examples); /* predict --limit: no more */
    if (s->d && !e->fixed) s->own = recipe_tokenizer(e);
    s->tok = e->fixed ? e->fixed : s->own;
    if (!s->d || !s->tok) {
        snli_free(s);
        return -1;
    }
    *data = s;
    return 0;
}

static const gf_tokenizer *snli_tokenizer(const void *data) { return ((const snli_data *)data)->tok; }

static int set(gf_config *cfg, const char *kv, char *said, size_t n) {
    if (gf_config_set(cfg, kv)) return -1;
    snprintf(said + strlen(said), n - strlen(said), " %s", kv);
    return 0;
}

/* The n_classes of a classify config's head. */
static int64_t n_classes(const gf_config *cfg) {
    char *v = gf_config_get(cfg, "head.n_classes");
    int64_t n = v ? strtoll(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* What snli_configure changes: vocab_size (kv), then a pair classifier with room for its examples. */
static int snli_structure(const snli_options *o, gf_config *cfg, char *kv, size_t n_kv, char *said, size_t n_said) {
    if (set(cfg, kv, said, n_said)) return -1;
    if (!strcmp(cfg->head_kind, "classify") && n_classes(cfg) != GF_NLI_CLASSES)
        return gf_fail("--task snli: the model's classify head has n_classes %lld; SNLI has 3 labels (entailment, "
                       "neutral, contradiction)\nHINT: --set head.n_classes=3", (long long)n_classes(cfg));
    if (strcmp(cfg->head_kind, "classify")) {
        if (set(cfg, "head.kind=classify", said, n_said) || set(cfg, "head.n_classes=3", said, n_said) ||
            set(cfg, "direction=bidirectional", said, n_said))
            return -1;
        if (cfg->segments == 0 && set(cfg, "segments=2", said, n_said)) return -1;
    }
    const int64_t longest = 2 * o->max_sent + 3;
    if (cfg->pos == GF_POS_LEARNED && cfg->max_len < longest) {
        snprintf(kv, n_kv, "max_len=%lld", (long long)longest);
        if (set(cfg, kv, said, n_said)) return -1;
    }
    return 0;
}

/* A pair classifier over the WordPiece vocabulary: a language-model config (a preset) becomes a
 * bidirectional 3-way classifier with two token types; a classify config keeps its own choices. Says what
 * it changed (data NULL: a check before the data is read; the vocabulary is left as it is, silently). */
static int snli_configure(const void *data, const void *options, gf_config *cfg) {
    const snli_data *s = data;
    char kv[64], said[512] = "";
    char *before = gf_config_to_json(cfg, false);
    if (!before) return gf_fail("out of memory");
    const int64_t vocab = s ? gf_tokenizer_vocab_size(s->tok) : cfg->vocab_size; /* a check: left as it is */
    snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)vocab);
    int rc = snli_structure(options, cfg, kv, sizeof kv, said, sizeof said);
    char *after = rc ? NULL : gf_config_to_json(cfg, false);
    if (s && after && strcmp(before, after)) gf_note("snli: the model is set to%s", said);
    free(before);
    free(after);
    return rc;
}

static gf_source *snli_source(const void *data, int split, const void *options, uint64_t seed) {
    const snli_data *s = data;
    const int64_t max_sent = ((const snli_options *)options)->max_sent;
    const gf_nli_split *sp = &s->d->split[split];
    const char *name = sp->all ? sp->path : split == GF_TRAIN ? "train" : split == GF_VALID ? "dev" : "test";
    if (sp->n == 0) {
        gf_fail("the snli %s split (%s) has no pair to use (rows %lld: labelled - for no consensus %lld, with an empty "
                "sentence %lld); expected at least one labelled pair", name, sp->path,
                (long long)sp->rows, (long long)sp->unlabelled, (long long)sp->empty);
        return NULL;
    }
    gf_pair_source_stats st;
    gf_source *src = gf_pair_source_create(sp, s->tok, max_sent, seed, &st);
    if (src && st.truncated)
        gf_note("snli %s: %lld of %lld pairs have a sentence longer than --max-sent %lld pieces; cut to it", name,
                (long long)st.truncated, (long long)st.pairs, (long long)max_sent);
    return src;
}

static void snli_describe(const void *data, char *buf, size_t n) {
    const snli_data *s = data;
    snprintf(buf, n, "%lld train pairs (dev %lld, test %lld), WordPiece vocabulary %lld", (long long)s->d->split[0].n,
             (long long)s->d->split[1].n, (long long)s->d->split[2].n, (long long)gf_tokenizer_vocab_size(s->tok));
}

static const char *snli_label(const void *data, int64_t i) {
    (void)data;
    return i >= 0 && i < GF_NLI_CLASSES ? gf_nli_label_name((int)i) : NULL;
}

static int snli_owns(const char *corpus, const char *data_dir) { return gf_nli_is_spec(corpus, data_dir); }

static const char *const SPLIT_NAMES[3] = {"train", "dev", "test"}; /* SNLI's names for the splits */

/* What stats shows: the three splits of a folder, or the one file of pairs ("pairs", read whole). */
typedef struct {
    gf_nli_data *d;
    int n;
    const char *name[3];
    const gf_nli_split *split[3];
} stats_data;

/* The --json form of snli_stats (cJSON escapes the paths; a byte that is not UTF-8 becomes U+FFFD). */
static char *stats_json(const char *spec, const stats_data *sd) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "corpus", spec);
    for (int k = 0; k < sd->n; k++) {
        const gf_nli_split *s = sd->split[k];
        cJSON *j = cJSON_AddObjectToObject(o, sd->name[k]);
        cJSON_AddStringToObject(j, "file", s->path);
        cJSON_AddStringToObject(j, "format", s->format);
        cJSON_AddNumberToObject(j, "rows", (double)s->rows);
        cJSON_AddNumberToObject(j, "pairs", (double)s->n);
        for (int c = 0; c < GF_NLI_CLASSES; c++) cJSON_AddNumberToObject(j, gf_nli_label_name(c), (double)s->per_label[c]);
        cJSON_AddNumberToObject(j, s->all ? "no_label" : "no_consensus", (double)s->unlabelled);
        cJSON_AddNumberToObject(j, "empty", (double)s->empty);
    }
    char *txt = gf_json_utf8(cJSON_PrintUnformatted(o)), *line = txt ? malloc(strlen(txt) + 2) : NULL;
    if (line) sprintf(line, "%s\n", txt);
    free(txt);
    cJSON_Delete(o);
    if (!line) gf_fail("out of memory printing the statistics as JSON");
    return line;
}

static char *stats_text(const char *spec, const stats_data *sd) {
    size_t len;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        gf_fail("out of memory");
        return NULL;
    }
    if (sd->split[0]->all)
        fprintf(f, "corpus %s: a file of sentence pairs, read whole (pairs without a label or with an empty sentence "
                "are kept: predict shows them, eval counts the labelled ones)\n", spec);
    else
        fprintf(f, "corpus %s: sentence pairs (rows labelled - and pairs with an empty sentence are dropped)\n", spec);
    for (int k = 0; k < sd->n; k++) {
        const gf_nli_split *s = sd->split[k];
        fprintf(f, "  %-6s %8lld pairs  entailment %lld  neutral %lld  contradiction %lld  (of %lld rows: %lld "
                "%s, %lld empty)  %s [%s]\n", sd->name[k], (long long)s->n, (long long)s->per_label[0],
                (long long)s->per_label[1], (long long)s->per_label[2], (long long)s->rows, (long long)s->unlabelled,
                s->all ? "without a label" : "labelled -", (long long)s->empty, s->path, s->format);
    }
    if (fclose(f) == 0) return text;
    free(text);
    gf_fail("out of memory writing the statistics");
    return NULL;
}

/* Pairs and labels of each split, counted as they are read (before any tokenizer). */
static int snli_stats(const gf_task_env *e, bool json, char **text) {
    if (e->tokenizer && e->tokenizer[0]) {
        gf_fail("--tokenizer: %s holds sentence pairs, counted before tokenizing", e->corpus);
        return GF_TASK_NOT_APPLICABLE;
    }
    const bool file = gf_nli_whole_file(e->corpus);
    stats_data sd = {.d = gf_nli_load_splits(e->corpus, e->data_dir, file ? 1u << GF_VALID : 7u), .n = file ? 1 : 3};
    if (!sd.d) return -1;
    for (int k = 0; k < sd.n; k++) {
        sd.name[k] = file ? "pairs" : SPLIT_NAMES[k];
        sd.split[k] = &sd.d->split[file ? GF_VALID : k];
    }
    *text = json ? stats_json(e->corpus, &sd) : stats_text(e->corpus, &sd);
    gf_nli_free(sd.d);
    return *text ? 0 : -1;
}

const gf_task_ops gf_task_snli = {
    .version = GF_TASK_OPS_VERSION, .name = "snli",
    .help = "sentence-pair classification (entailment, neutral, contradiction)", .metric = "accuracy",
    .unit = "pairs", .counted = "pairs", .options_size = sizeof(snli_options), .keys = SNLI_KEYS,
    .n_keys = (int)(sizeof SNLI_KEYS / sizeof SNLI_KEYS[0]), .load = snli_load, .tokenizer = snli_tokenizer,
    .configure = snli_configure, .source = snli_source, .describe = snli_describe, .label = snli_label,
    .owns = snli_owns, .free = snli_free, .stats = snli_stats,
    .data_help = "--corpus snli (the dev and test splits and 1% of train grassflow ships) | the folder of\n"
                 "snli_1.0.zip (snli_1.0_{train,dev,test}.{jsonl,txt,tsv}[.xz]) | for eval and predict, one\n"
                 "file of pairs (jsonl, TSV or CSV, plain or .xz: README, \"Score your own pairs\"), scored whole;\n"
                 "--tokenizer wordpiece:VOCAB (default: the BERT vocabulary, data/bert-base-uncased/vocab.txt)\n"};
