/* The language-model task: blocks of a tokenized text corpus (data/corpus.h), scored by perplexity. */
#include <stdio.h>

#include "cli/task.h"
#include "data/corpus.h"

/* A training split of a single distinct token (a file of blank lines, one repeated character) teaches
 * nothing, and with a char or word vocabulary scores perplexity 1: refused, not reported as a perfect model. */
static int one_symbol_corpus(const gf_corpus *c, const gf_train_opts *o) {
    const gf_ids *tr = &c->split[GF_TRAIN];
    for (int64_t i = 1; i < tr->n; i++)
        if (tr->v[i] != tr->v[0]) return 0;
    cli_error("--corpus %s: its training split is %lld copies of one token with the %s tokenizer; a model learns "
              "nothing from it (and with a char or word vocabulary every perplexity would be 1)\nHINT: check the "
              "file: it holds one symbol over and over (blank lines only?)",
              o->corpus, (long long)tr->n, gf_tok_kind_name(c->tok->kind));
    return 1;
}

static int lm_load(const gf_train_opts *o, bool no_cache, const gf_tokenizer *fixed, void **data) {
    gf_corpus *c = gf_corpus_load(o->corpus, cli_data_dir(), o->tokenizer[0] ? o->tokenizer : NULL, fixed,
                                  no_cache ? NULL : cli_cache_dir());
    if (!c) return cli_error("%s", gf_last_error());
    if (c->cache_note[0]) fprintf(stderr, "grassflow: %s\n", c->cache_note);
    if (one_symbol_corpus(c, o)) {
        gf_corpus_free(c);
        return EXIT_RUNTIME;
    }
    *data = c;
    return EXIT_OK;
}

static const gf_tokenizer *lm_tokenizer(const void *data) { return ((const gf_corpus *)data)->tok; }

static int lm_configure(const void *data, const gf_train_opts *o, gf_config *cfg) {
    (void)o;
    if (!data) return EXIT_OK; /* a check before the data is read: the vocabulary is all the task sets */
    char kv[64];
    snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)((const gf_corpus *)data)->tok->vocab.n);
    return gf_config_set(cfg, kv) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

static gf_source *lm_source(const void *data, int split, const gf_train_opts *o) {
    const gf_ids *s = &((const gf_corpus *)data)->split[split];
    return gf_lm_source_create(s->v, s->n, o->seq_len, o->seed);
}

static void lm_describe(const void *data, char *buf, size_t n) {
    const gf_corpus *c = data;
    snprintf(buf, n, "%lld train tokens, vocabulary %lld", (long long)c->split[GF_TRAIN].n, (long long)c->tok->vocab.n);
}

static void lm_free(void *data) { gf_corpus_free(data); }

static const cli_task_flag LM_FLAGS[] = {
    {"--seq-len", "the tokens of a block"},
    {"--stream", "score a block one token at a time with the streaming engine"},
    {NULL, NULL}};

const cli_task cli_task_lm = {.name = "lm", .what = "a language model on a text corpus (blocks of --seq-len tokens)",
                              .metric = "ppl", .load = lm_load, .tokenizer = lm_tokenizer, .configure = lm_configure,
                              .source = lm_source, .describe = lm_describe, .free = lm_free,
                              .flags = LM_FLAGS};
