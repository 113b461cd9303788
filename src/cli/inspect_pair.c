/* grassflow inspect on an encoder-decoder (a g2p model): --text is the source (a word, read by the task as predict
 * reads a line), --target its target (its pieces between spaces; default: the model's greedy decoding), inspected
 * by gf_model_inspect_pair and reported as a language model's inspection is (inspect.c); or, with --drop-offset
 * or --force-gate, the target's loss under that override and without it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

enum { TARGET_MAX = 256 }; /* target tokens inspect reads */

/* --target's pieces, each one of the tokenizer's, between the decoder's first input and the end: ids[0..*n). */
static int given_target(const gf_tokenizer *tok, const char *target, int32_t eos, int32_t *ids, int64_t cap, int64_t *n) {
    *n = 0;
    ids[(*n)++] = eos;
    for (const char *p = target; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        const size_t len = strcspn(p, " \t");
        if (!len) break;
        const int32_t id = gf_tokenizer_find(tok, p, len);
        if (id < 0 || id == eos)
            return cli_error("--target: '%.*s' is not one of the checkpoint's target pieces (give them between "
                             "spaces, as predict prints them)", (int)(len < 64 ? len : 64), p);
        if (*n + 1 >= cap) return cli_error("--target: more than %lld pieces; this model decodes at most that many",
                                            (long long)cap - 2);
        ids[(*n)++] = id;
        p += len;
    }
    if (*n == 1) return cli_error("--target is empty; give the target's pieces between spaces, or drop the flag "
                                  "to inspect the model's own decoding");
    ids[(*n)++] = eos;
    return EXIT_OK;
}

/* The model's greedy decoding of the source between its first input and the end: ids[0..*n). */
static int decoded_target(gf_model *m, const int32_t *src, int64_t S, int32_t eos, int32_t *ids, int64_t cap, int64_t *n) {
    gf_decode_opts o = gf_decode_opts_default();
    o.bos = o.eos = eos;
    o.max_len = cap - 2;
    int64_t k = 0;
    if (gf_model_decode(m, src, S, &o, ids + 1, &k, NULL)) return cli_error("%s", gf_last_error());
    ids[0] = eos, ids[k + 1] = eos;
    *n = k + 2;
    return EXIT_OK;
}

/* The target's pieces, then the source's labels: T + S strings (malloc'd). */
static char **pair_pieces(const gf_tokenizer *tok, const int32_t *ids, int64_t n, const int32_t *src, int64_t S,
                          int64_t source_vocab) {
    char **p = calloc((size_t)(n + S), sizeof *p), buf[32];
    for (int64_t i = 0; p && i < n + S; i++) {
        if (i >= n) cli_source_label(buf, sizeof buf, src[i - n], source_vocab);
        if (!(p[i] = i < n ? cli_piece(tok, ids[i]) : strdup(buf))) {
            for (int64_t k = 0; k < i; k++) free(p[k]);
            free(p);
            return NULL;
        }
    }
    return p;
}

/* The target's loss under the override and without it. */
static int score_pair(gf_model *m, const int32_t *src, int64_t S, const int32_t *ids, int64_t n, const cli_override *ov,
                      bool json) {
    int32_t *tg = malloc((size_t)n * sizeof *tg);
    if (!tg) return cli_error("out of memory");
    for (int64_t t = 0; t < n; t++) tg[t] = t + 1 < n ? ids[t + 1] : -1;
    const gf_batch b = {.B = 1, .T = n, .ids = ids, .targets = tg, .S = S, .source = src};
    float base = NAN, loss = NAN;
    int rc = gf_model_forward_batch(m, &b, &base) ? cli_error("%s", gf_last_error()) : cli_eval_override(m, ov);
    if (!rc && gf_model_forward_batch(m, &b, &loss)) rc = cli_error("%s", gf_last_error());
    free(tg);
    if (rc) return rc;
    if (json)
        printf("{\"source_tokens\": %lld, \"tokens\": %lld, \"predicted\": %lld, \"loss\": %s, \"base_loss\": %s, "
               "\"delta\": %s, \"override\": %s}\n", (long long)S, (long long)n, (long long)n - 1,
               gf_json_num(loss, 'g', 9).s, gf_json_num(base, 'g', 9).s, gf_json_num(loss - base, 'g', 9).s, ov->json);
    else
        printf("target: %lld tokens predicted: loss %.6f with %s (%s); without it %.6f (change %+.6f)\n",
               (long long)n - 1, loss, ov->text, ov->flags, base, loss - base);
    return EXIT_OK;
}

int cli_inspect_pair(gf_model *m, const gf_tokenizer *tok, const char *rj, const eval_args *a, const inspect_opts *o,
                     const cli_override *ov) {
    const int32_t eos = tok ? gf_tokenizer_eos_id(tok) : -1;
    if (eos < 0) return cli_error("%s carries no target tokenizer with an end token; inspect cannot read its targets",
                                  gf_show_name(a->ckpt));
    if (o->text_file) return cli_error("--text-file: an encoder-decoder's source is one word: give it with --text");
    gf_task_recipe t;
    int32_t *src = NULL, ids[TARGET_MAX + 2];
    int64_t S = 0, n = 0;
    int rc = cli_checkpoint_task(m, a, rj, &t);
    if (!rc && gf_task_source_ids(t.task, t.options.bytes, o->text, strlen(o->text), "--text", &src, &S))
        rc = cli_error("%s", gf_last_error());
    /* the decoder's input: its first, the target, the end: at most max_len with learned positions */
    const int64_t cap = gf_decode_max_len(m) < TARGET_MAX + 2 ? gf_decode_max_len(m) : TARGET_MAX + 2;
    if (!rc) rc = o->target ? given_target(tok, o->target, eos, ids, cap, &n) : decoded_target(m, src, S, eos, ids, cap, &n);
    if (!rc && ov) rc = score_pair(m, src, S, ids, n, ov, a->json);
    gf_inspection *x = NULL;
    if (!rc && !ov && !(x = gf_model_inspect_pair(m, src, S, ids, n))) rc = cli_error("%s", gf_last_error());
    char **pieces = x ? pair_pieces(tok, ids, n, src, S, gf_model_config(m)->source_vocab) : NULL;
    if (x && !pieces) rc = cli_error("out of memory");
    if (!rc && x) rc = cli_inspect_report(x, (const char *const *)pieces, a, o);
    for (int64_t i = 0; pieces && i < n + S; i++) free(pieces[i]);
    free(pieces);
    gf_inspection_free(x);
    free(src);
    return rc;
}
