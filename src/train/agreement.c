/* What the ranks of a training run compare before they first work together (agreement.h). */
#include "train/agreement.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

typedef struct {
    gf_agree_item it[GF_AGREE_MAX];
    int n;
    char *owned[GF_AGREE_MAX]; /* texts made here, freed after the comparison */
    int n_owned;
} facts;

static void add(facts *l, gf_agree_item it) {
    if (l->n < GF_AGREE_MAX) l->it[l->n++] = it;
}
static void add_int(facts *l, const char *group, const char *label, const char *unit, int64_t v) {
    add(l, (gf_agree_item){.group = group, .label = label, .unit = unit, .kind = GF_AGREE_INT, .i = v});
}
static void add_real(facts *l, const char *group, const char *label, double v) {
    add(l, (gf_agree_item){.group = group, .label = label, .kind = GF_AGREE_REAL, .f = v});
}
static void add_hash(facts *l, const char *group, const char *label, uint64_t h) {
    add(l, (gf_agree_item){.group = group, .label = label, .kind = GF_AGREE_HASH, .h = h});
}
static void add_text(facts *l, const char *group, const char *label, const char *text) {
    add(l, (gf_agree_item){.group = group, .label = label, .kind = GF_AGREE_TEXT, .text = text});
}
/* A text made here (malloc'd; kept until the comparison is over); NULL: out of memory, and an empty one. */
static void add_owned(facts *l, const char *group, const char *label, char *text) {
    if (text && l->n_owned < GF_AGREE_MAX) l->owned[l->n_owned++] = text;
    add_text(l, group, label, text ? text : "");
}

static uint64_t hash_str(const char *s) { return s ? gf_dist_hash(s, strlen(s), 0) : 0; }

/* The corpus: the vocabulary and the tokenizer's pieces, then (once known) each split's examples and hash. */
static void corpus_facts(facts *l, const gf_run_facts *f) {
    add_int(l, "corpus", "vocabulary", "tokens", gf_model_config(f->m)->vocab_size);
    add_hash(l, "corpus", "tokenizer (a hash of its pieces)", hash_str(f->o->tokenizer_json));
    if (!f->n) return;
    add_int(l, "corpus", "training split", "examples", f->n[0]);
    add_hash(l, "corpus", "training data (a hash of its batches)", f->h[0]);
    add_int(l, "corpus", "validation split", "examples", f->n[1]);
    add_hash(l, "corpus", "validation data (a hash of its batches)", f->h[1]);
}

/* The task's recipe (made_from_json): the model's name and the task into their groups, each other option as
 * one text "--seq-len 128" (the corpus is compared by its contents above, not by its path). */
static void task_facts(facts *l, const cJSON *made, bool model) {
    const cJSON *it;
    cJSON_ArrayForEach(it, made) {
        if (!it->string || !strcmp(it->string, "corpus") || !strcmp(it->string, "model") != model) continue; /* its group's */
        char *v = cJSON_IsString(it) ? NULL : cJSON_PrintUnformatted(it), *text = malloc(strlen(it->string) + 64 +
                                                                                         (v ? strlen(v) : strlen(it->valuestring)));
        if (text) {
            sprintf(text, "--%s %s", it->string, v ? v : it->valuestring);
            for (char *c = text + 2; *c && *c != ' '; c++) *c = *c == '_' ? '-' : *c;
        }
        free(v);
        add_owned(l, model ? "model" : "recipe", NULL, text);
    }
}

static void model_facts(facts *l, const gf_run_facts *f, const cJSON *made) {
    task_facts(l, made, true);
    add_int(l, "model", "parameters", NULL, gf_model_num_params(f->m));
    add_int(l, "model", "trainable parameters", NULL, gf_model_num_trainable(f->m));
    char *cfg = gf_config_to_json(gf_model_config(f->m), false);
    add_hash(l, "model", "config (a hash of its JSON)", hash_str(cfg));
    free(cfg);
    if (f->weights)
        add_hash(l, "model", "initial weights (a hash)",
                 gf_dist_hash(gf_model_params(f->m), (size_t)gf_model_num_params(f->m) * sizeof(float), 0));
}

/* Every option of the recipe that changes what the ranks compute or when they meet (not --log-every and
 * --save-every, which rank 0 alone acts on, nor --out, whose path may differ from node to node). */
static void recipe_facts(facts *l, const gf_run_facts *f, const cJSON *made) {
    const gf_train_opts *o = f->o;
    const char *r = "recipe";
    add_int(l, r, "--batch", NULL, o->batch);
    add_int(l, r, "--accum", NULL, o->accum);
    add_int(l, r, "--steps", NULL, o->steps);
    add_int(l, r, "--epochs", NULL, o->epochs);
    add_int(l, r, "the run's total", "steps", f->total);
    add_int(l, r, "--warmup", NULL, o->warmup);
    add_real(l, r, "--lr", o->lr);
    add_real(l, r, "--min-lr", o->min_lr);
    add_real(l, r, "--wd", o->wd);
    add_real(l, r, "--clip", o->clip);
    add_real(l, r, "--beta1", o->beta1);
    add_real(l, r, "--beta2", o->beta2);
    add_real(l, r, "--eps", o->eps);
    add_int(l, r, "--seed", NULL, (int64_t)o->seed);
    add_text(l, r, "--precision", gf_precision_name(o->precision));
    add_text(l, r, "--deterministic", o->deterministic ? "on" : "off");
    /* each example's gradient is the same bits on every rank only on as many threads (OpenBLAS and the
     * parallel loops round otherwise on more of them); without --deterministic the ranks' shares are summed,
     * and a rank's thread count changes nothing the others compute from the sum */
    add_int(l, r, "--threads (with --deterministic)", NULL, o->deterministic ? gf_threads() : 0);
    add_int(l, r, "BLAS threads (with --deterministic)", NULL, o->deterministic ? gf_blas_threads() : 0);
    add_text(l, r, "--on-nonfinite", o->on_nonfinite == GF_NONFINITE_SKIP ? "skip" : "stop");
    add_text(l, r, "the feature cache (--no-feature-cache)", o->feature_cache ? "on" : "off");
    add_int(l, r, "--eval-every", NULL, o->eval_every);
    add_int(l, r, "--patience", NULL, o->patience);
    add_int(l, r, "--stop-at", NULL, o->stop_at);
    add_hash(l, r, "--init-from (a hash of the checkpoint)", o->init_from[0] ? o->init_from_fnv1a64 : 0);
    task_facts(l, made, false);
}

/* A resumed run, loaded: where it stands, its weights and moments, its schedule. */
static void state_facts(facts *l, const gf_run_facts *f) {
    const gf_run_progress *p = f->p;
    const char *s = "state";
    add_int(l, s, "step", NULL, p->step);
    const size_t P = (size_t)gf_model_num_params(f->m), T = (size_t)gf_model_num_trainable(f->m);
    uint64_t h = gf_dist_hash(gf_model_params(f->m), P * sizeof(float), 0);
    h = gf_dist_hash(gf_adamw_m(f->opt), T * sizeof(float), h);
    add_hash(l, s, "weights and AdamW moments (a hash)", gf_dist_hash(gf_adamw_v(f->opt), T * sizeof(float), h));
    add_real(l, s, "best validation loss", p->best);
    add_real(l, s, "best validation score (a metric not of the loss)", p->best_score);
    add_int(l, s, "evaluations without a better score (--patience)", NULL, p->bad_evals);
    add_text(l, s, "early stop", p->stopped_early);
    add_int(l, s, "the schedule's decay from", "steps", f->o->decay_from);
    add_real(l, s, "the schedule's rate at that step", f->o->decay_from_lr);
}

int gf_train_agree(const gf_run_facts *f) {
    if (gf_dist_size() == 1) return 0;
    facts *l = calloc(1, sizeof *l);
    if (!l) return gf_fail("out of memory comparing the ranks' runs");
    cJSON *made = f->o->made_from_json ? cJSON_Parse(f->o->made_from_json) : NULL;
    corpus_facts(l, f);
    model_facts(l, f, made);
    recipe_facts(l, f, made);
    if (f->p) state_facts(l, f);
    cJSON_Delete(made);
    const int rc = gf_dist_agree(f->p ? "training (resumed)" : "training", l->it, l->n);
    for (int k = 0; k < l->n_owned; k++) free(l->owned[k]);
    free(l);
    return rc;
}
