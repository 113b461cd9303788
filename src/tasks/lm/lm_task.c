/* The language-model task: blocks of a tokenized text corpus (tasks/lm/corpus.h), scored by perplexity. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "tasks/lm/corpus.h"
#include "tasks/lm/lm_source.h"
#include "io/json_out.h"
#include "plugin/schema.h"
#include "tasks/task.h"

typedef struct {
    int64_t seq_len;
    int eval_blocks;   /* GF_LM_STRIDE, GF_LM_CHUNKS */
    int eval_specials; /* 0: none; 1: [CLS] ... [SEP] once around a scored split */
} lm_options;

static const char *const BLOCKS[] = {"stride", "chunks", NULL};
static const char *const SPECIALS[] = {"none", "cls-sep", NULL};

static const gf_cfg_key LM_KEYS[] = {
    {.name = "seq_len", .type = GF_KEY_INT, .off = offsetof(lm_options, seq_len), .lo = 1, .hi = 1 << 24,
     .def = "128", .help = "the tokens of a block (at most a learned-position model's max_len)"},
    {.name = "eval_blocks", .type = GF_KEY_ENUM, .off = offsetof(lm_options, eval_blocks), .names = BLOCKS,
     .def = "\"stride\"", .help = "scoring a split: stride, blocks of L + 1, stride L; chunks, the reproductions' "
     "chunks of L, the rest dropped"},
    {.name = "eval_specials", .type = GF_KEY_ENUM, .off = offsetof(lm_options, eval_specials), .names = SPECIALS,
     .def = "\"none\"", .help = "cls-sep: [CLS] and [SEP] once around a scored split (WordPiece); none"},
};

/* A training split of a single distinct token (a file of blank lines, one repeated character) teaches
 * nothing, and with a char or word vocabulary scores perplexity 1: refused, not reported as a perfect model. */
static int one_symbol_corpus(const gf_corpus *c, const char *corpus) {
    const gf_ids *tr = &c->split[GF_TRAIN];
    for (int64_t i = 1; i < tr->n; i++)
        if (tr->v[i] != tr->v[0]) return 0;
    return gf_fail("--corpus %s: its training split is %lld copies of one token with the %s tokenizer; a model "
                   "learns nothing from it (and with a char or word vocabulary every perplexity would be 1)\nHINT: "
                   "check the file: it holds one symbol over and over (blank lines only?)",
                   corpus, (long long)tr->n, gf_tok_kind_name(c->tok->kind));
}

/* Text a fixed char vocabulary cannot read, in data to train on: refused (eval scores it, counting what it
 * skipped; a model does not learn from text with holes in it). */
static int skipped_chars(const gf_corpus *c, const char *corpus) {
    for (int s = 0; s < 3; s++)
        if (c->counts[s].skipped)
            return gf_fail("--corpus %s: its %s split holds %lld character(s) outside the model's char vocabulary, "
                           "the first at byte %lld; a model cannot be trained on characters it has no id for\nHINT: "
                           "start a new run, whose vocabulary is built from the corpus: grassflow train --corpus %s "
                           "(--tokenizer byte reads any text)", corpus, gf_split_name(s),
                           (long long)c->counts[s].skipped, (long long)c->counts[s].first_skipped, corpus);
    return 0;
}

static int lm_load(const gf_task_env *e, const void *options, void **data) {
    (void)options;
    gf_corpus *c = gf_corpus_load(e->corpus, e->data_dir, e->tokenizer && e->tokenizer[0] ? e->tokenizer : NULL,
                                  e->fixed, e->no_cache ? NULL : e->cache_dir);
    if (!c) return -1;
    if (c->cache_note[0]) gf_note("%s", c->cache_note);
    if (c->note[0] && (e->splits & (1u << GF_TRAIN))) gf_note("%s", c->note);
    if ((!e->score_only && skipped_chars(c, e->corpus)) ||
        ((e->splits & (1u << GF_TRAIN)) && one_symbol_corpus(c, e->corpus))) {
        gf_corpus_free(c);
        return -1;
    }
    *data = c;
    return 0;
}

static const gf_tokenizer *lm_tokenizer(const void *data) { return ((const gf_corpus *)data)->tok; }

static int lm_configure(const void *data, const void *options, gf_config *cfg) {
    (void)options;
    if (!data) return 0; /* a check before the data is read: the vocabulary is all the task sets */
    char kv[64];
    snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)((const gf_corpus *)data)->tok->vocab.n);
    return gf_config_set(cfg, kv);
}

/* The ids of [CLS] and [SEP] in c's vocabulary into *cls, *sep when o asks for them (else -1): 0, or -1 for a
 * vocabulary without them. */
static int special_ids(const gf_corpus *c, const lm_options *o, int32_t *cls, int32_t *sep) {
    *cls = *sep = -1;
    if (!o->eval_specials) return 0;
    *cls = gf_vocab_find(&c->tok->vocab, "[CLS]", 5);
    *sep = gf_vocab_find(&c->tok->vocab, "[SEP]", 5);
    if (*cls >= 0 && *sep >= 0) return 0;
    return gf_fail("--eval-specials cls-sep: the %s vocabulary has no [CLS] and [SEP] tokens\nHINT: it is for a "
                   "WordPiece vocabulary (--tokenizer wordpiece:VOCAB); use --eval-specials none",
                   gf_tok_kind_name(c->tok->kind));
}

/* A training split is read in blocks of L + 1 under every protocol; a scored one by the protocol. */
static gf_source *lm_source(const void *data, int split, const void *options, uint64_t seed) {
    const gf_corpus *c = data;
    const lm_options *o = options;
    const gf_ids *s = &c->split[split];
    int32_t cls, sep;
    if (split == GF_TRAIN) return gf_block_source_create(s->v, s->n, o->seq_len, seed);
    return special_ids(c, o, &cls, &sep) ? NULL
                                         : gf_lm_source_create(s->v, s->n, o->seq_len, seed, o->eval_blocks, cls, sep);
}

/* How lines become one token stream under each tokenizer. */
static const char *line_rule(gf_tok_kind k) {
    switch (k) {
    case GF_TOK_WORD: return "each line (empty ones too) ends in <eos>";
    case GF_TOK_WORDPIECE: return "lines joined by a newline, read as a space (empty lines add nothing)";
    default: return "a newline is a token like any character";
    }
}

/* One line naming how a split is scored: "blocks of 129 tokens with stride 128 ...". */
static void lm_protocol(const void *data, const void *options, char *buf, size_t n) {
    const lm_options *o = options;
    const long long L = (long long)o->seq_len;
    char blocks[160];
    if (o->eval_blocks == GF_LM_CHUNKS)
        snprintf(blocks, sizeof blocks, "chunks: non-overlapping chunks of %lld tokens, the remainder dropped, %lld "
                 "predictions each", L, L - 1);
    else
        snprintf(blocks, sizeof blocks, "stride: blocks of %lld tokens with stride %lld, every token but the first "
                 "predicted once", L + 1, L);
    snprintf(buf, n, "%s; %s; %s; the mean loss per predicted token", blocks,
             o->eval_specials ? "[CLS] and [SEP] once around the split" : "no [CLS]/[SEP]",
             line_rule(((const gf_corpus *)data)->tok->kind));
}

static void lm_describe(const void *data, char *buf, size_t n) {
    const gf_corpus *c = data;
    snprintf(buf, n, "%lld train tokens, vocabulary %lld", (long long)c->split[GF_TRAIN].n, (long long)c->tok->vocab.n);
}

static int lm_check_options(const void *options, const gf_config *cfg) {
    const int64_t L = ((const lm_options *)options)->seq_len;
    if (cfg->pos == GF_POS_LEARNED && L > cfg->max_len)
        return gf_fail("--seq-len %lld is above the model's max_len %lld", (long long)L, (long long)cfg->max_len);
    return 0;
}

/* A checkpoint without a recipe is scored in blocks of its max_len (learned positions), else of 128. */
static void lm_eval_defaults(void *options, const gf_config *cfg) {
    if (cfg->max_len > 0) ((lm_options *)options)->seq_len = cfg->max_len;
}

static void lm_free(void *data) { gf_corpus_free(data); }

static int lm_text_counts(const void *data, int split, gf_text_counts *out) {
    if (split < 0 || split > 2) return -1;
    *out = ((const gf_corpus *)data)->counts[split];
    return 0;
}

/* Lines and tokens of each split and the vocabulary (grassflow data stats). */
static int lm_stats(const gf_task_env *e, bool json, char **text) {
    gf_corpus *c = gf_corpus_load(e->corpus, e->data_dir, e->tokenizer && e->tokenizer[0] ? e->tokenizer : NULL,
                                  e->fixed, e->no_cache ? NULL : e->cache_dir);
    if (!c) return -1;
    if (c->cache_note[0]) gf_note("%s", c->cache_note);
    if (c->note[0]) gf_note("%s", c->note);
    size_t len;
    FILE *f = open_memstream(text, &len);
    if (!f) {
        gf_corpus_free(c);
        return gf_fail("out of memory");
    }
    if (json) {
        fprintf(f, "{\"corpus\": ");
        gf_json_put_str(f, e->corpus); /* a path may hold " or \ */
        fprintf(f, ", \"tokenizer\": \"%s\", \"vocab_size\": %lld", gf_tok_kind_name(c->tok->kind),
                (long long)c->tok->vocab.n);
        for (int s = 0; s < 3; s++)
            fprintf(f, ", \"%s\": {\"lines\": %lld, \"tokens\": %lld, \"words\": %lld, \"unknown\": %lld}",
                    gf_split_name(s), (long long)c->lines[s], (long long)c->split[s].n, (long long)c->counts[s].words,
                    (long long)c->counts[s].unknown);
        fprintf(f, "}\n");
    } else {
        fprintf(f, "corpus %s, tokenizer %s, vocabulary %lld\n", e->corpus, gf_tok_kind_name(c->tok->kind),
                (long long)c->tok->vocab.n);
        for (int s = 0; s < 3; s++)
            fprintf(f, "  %-6s %10lld lines %12lld tokens %12lld words %10lld unknown\n", gf_split_name(s),
                    (long long)c->lines[s], (long long)c->split[s].n, (long long)c->counts[s].words,
                    (long long)c->counts[s].unknown);
    }
    gf_corpus_free(c);
    if (fclose(f) == 0) return 0;
    free(*text);
    *text = NULL;
    return gf_fail("out of memory writing the statistics");
}

const gf_task_ops gf_task_lm = {
    .version = GF_TASK_OPS_VERSION, .name = "lm", .help = "a language model on a text corpus (blocks of --seq-len tokens)",
    .metric = "ppl", .unit = "tok", .counted = "tokens", .options_size = sizeof(lm_options), .keys = LM_KEYS,
    .n_keys = (int)(sizeof LM_KEYS / sizeof LM_KEYS[0]), .load = lm_load, .tokenizer = lm_tokenizer,
    .configure = lm_configure, .source = lm_source, .describe = lm_describe, .eval_defaults = lm_eval_defaults,
    .free = lm_free, .data_help = "--corpus wikitext-2 | wikitext-2-raw (the raw release's valid and test; train: the\n"
                                  "tokenized one's) | tinyshakespeare | a directory with train/valid/test(.txt|.txt.xz)\n"
                                  "| a text file (split 90/5/5); --tokenizer word | char | byte | wordpiece:VOCAB\n"
                                  "(default: word for wikitext-2, else char)\n", .stats = lm_stats, .check_options = lm_check_options,
    .text_counts = lm_text_counts, .eval_protocol = lm_protocol};
