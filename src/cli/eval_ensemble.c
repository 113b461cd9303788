/* eval and predict --ensemble A,B: more encoder-decoders decoding with --ckpt's as one (gf_ensemble_decode),
 * each loaded and checked against it here: an encoder-decoder of the same task, whose target tokenizer is the
 * same, so that a target id means the same phoneme to every model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

/* How member e's target vocabulary differs from m's (both tokenizers known: named), for an error. */
static const char *vocab_diff(const gf_model *e, const gf_model *m, bool both) {
    static char buf[160];
    const long long ne = (long long)gf_model_config(e)->vocab_size, nm = (long long)gf_model_config(m)->vocab_size;
    if (!both) snprintf(buf, sizeof buf, "one of them carries no tokenizer: an ensemble needs checkpoints from train");
    else if (ne != nm) snprintf(buf, sizeof buf, "%lld tokens against %lld", ne, nm);
    else snprintf(buf, sizeof buf, "the same %lld tokens, spelled or ordered otherwise", ne);
    return buf;
}

/* Member `path` loaded into *out and checked against the first model m (its tokenizer tok, task t). */
static int load_member(const eval_args *a, const gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t,
                       const char *path, gf_model **out) {
    gf_tokenizer *mt = NULL;
    char *rj = NULL;
    gf_model *e = cli_load_checkpoint(path, &mt, &rj);
    if (!e) return cli_error("--ensemble: %s", gf_last_error());
    gf_task_recipe r;
    const bool task_known = rj && gf_task_recipe_from_json(rj, path, &r) == 0;
    char *want = tok ? gf_tokenizer_to_json(tok) : NULL, *have = mt ? gf_tokenizer_to_json(mt) : NULL;
    int rc = EXIT_OK;
    if (gf_model_config(e)->source_vocab < 1)
        rc = cli_error("--ensemble %s: not an encoder-decoder (source_vocab 0); an ensemble decodes with "
                       "encoder-decoders only", path);
    else if (task_known && r.task != t->task)
        rc = cli_error("--ensemble %s: trained for task %s, %s for task %s; an ensemble's models share a task", path,
                       r.task->name, a->ckpt, t->task->name);
    else if (!want || !have || strcmp(want, have))
        rc = cli_error("--ensemble %s: its target vocabulary is not %s's (%s); an ensemble's models must give a "
                       "target id the same meaning\nHINT: models trained on the same lexicon with the same --stress "
                       "and --schwa", path, a->ckpt, vocab_diff(e, m, want && have));
    else if (a->weights_given)
        rc = cli_set_weights(e, a->weights, path);
    free(want), free(have), free(rj);
    gf_tokenizer_free(mt);
    if (rc) gf_model_free(e);
    else *out = e;
    return rc;
}

int cli_ensemble_load(const eval_args *a, gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t,
                      cli_ensemble *en) {
    en->models[0] = m;
    en->n = 1;
    if (!a->ensemble) return EXIT_OK;
    if (gf_model_config(m)->source_vocab < 1)
        return cli_usage_error(a->cmd, "--ensemble: %s is not an encoder-decoder; an ensemble decodes with "
                               "encoder-decoders only\nHINT: drop --ensemble", a->ckpt);
    if (a->align_dir)
        return cli_usage_error(a->cmd, "--ensemble with --align-dir: an alignment is one model's attention; an "
                               "ensemble has one for each model\nHINT: draw each model's with --ckpt alone");
    char *list = strdup(a->ensemble);
    if (!list) return cli_error("out of memory");
    int rc = EXIT_OK;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p && !rc; p = strtok_r(NULL, ",", &save)) {
        if (en->n == GF_DECODE_MAX_ENSEMBLE)
            rc = cli_usage_error(a->cmd, "--ensemble: more than %d models with --ckpt's", GF_DECODE_MAX_ENSEMBLE);
        else if (!(rc = load_member(a, m, tok, t, p, &en->models[en->n])))
            en->n++;
    }
    free(list);
    if (!rc && en->n == 1)
        rc = cli_usage_error(a->cmd, "--ensemble '%s' names no checkpoint; expected A[,B...]", a->ensemble);
    return rc;
}

void cli_ensemble_free(cli_ensemble *en) {
    for (int64_t k = 1; k < en->n; k++) gf_model_free(en->models[k]); /* the first is the caller's */
    en->n = 0;
}
