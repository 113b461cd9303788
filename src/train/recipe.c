/* The training recipe: defaults, and its JSON form (stored in every checkpoint and training state). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/number.h"
#include "train/trainer.h"

void gf_train_opts_default(gf_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->batch = 32;
    o->epochs = 1;
    o->warmup = 100;
    o->accum = 1;
    o->eval_every = 500;
    o->log_every = 10;
    const gf_adamw_hparams hp = gf_adamw_hparams_default(); /* one copy of the optimizer's defaults */
    o->lr = hp.lr;
    o->min_lr = 6e-5f;
    o->wd = hp.weight_decay;
    o->clip = 1.0f;
    o->beta1 = hp.beta1;
    o->beta2 = hp.beta2;
    o->eps = hp.eps;
    o->seed = 1234;
    o->feature_cache = true;
}

/* ---- the recipe as JSON (stored in checkpoints and in the training state) ----------------------------- */

char *gf_train_opts_to_json(const gf_train_opts *o) {
    cJSON *j = cJSON_CreateObject();
#define I(f) cJSON_AddNumberToObject(j, #f, (double)o->f)
#define F(f) cJSON_AddNumberToObject(j, #f, gf_float_shortest(o->f))
#define S(f) cJSON_AddStringToObject(j, #f, o->f)
    I(batch); I(steps); I(epochs); I(warmup); I(accum); I(eval_every); I(log_every); I(save_every); I(patience);
    F(lr); F(min_lr); F(wd); F(clip); F(beta1); F(beta2); F(eps);
    cJSON_AddStringToObject(j, "on_nonfinite", o->on_nonfinite == GF_NONFINITE_SKIP ? "skip" : "stop");
    cJSON_AddBoolToObject(j, "feature_cache", o->feature_cache);
    S(out_dir);
#undef I
#undef F
#undef S
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed); /* exact, beyond 2^53 */
    cJSON_AddStringToObject(j, "seed", seed);
    if (o->decay_from > 0) { /* an extended run's schedule (gf_train_lr) */
        cJSON_AddNumberToObject(j, "decay_from", (double)o->decay_from);
        char lr[40]; /* 17 digits read back to the same double (cJSON's own printing may drop the last bit) */
        snprintf(lr, sizeof lr, "%.17g", o->decay_from_lr);
        cJSON_AddRawToObject(j, "decay_from_lr", lr);
    }
    if (o->init_from[0]) {
        char h[32];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)o->init_from_fnv1a64);
        cJSON *f = cJSON_AddObjectToObject(j, "init_from");
        cJSON_AddStringToObject(f, "path", o->init_from);
        cJSON_AddNumberToObject(f, "bytes", (double)o->init_from_bytes);
        cJSON_AddStringToObject(f, "fnv1a64", h);
    }
    if (o->precision != GF_PRECISION_FP32) /* written only when not fp32: fp32 recipes stay as they were */
        cJSON_AddStringToObject(j, "precision", gf_precision_name(o->precision));
    if (o->deterministic) cJSON_AddBoolToObject(j, "deterministic", true); /* likewise, only when set */
    /* what the run was made from (its task's recipe), beside the trainer's keys */
    cJSON *extra = o->made_from_json ? cJSON_Parse(o->made_from_json) : NULL, *it;
    cJSON_ArrayForEach(it, extra)
        if (it->string && !cJSON_GetObjectItemCaseSensitive(j, it->string))
            cJSON_AddItemToObject(j, it->string, cJSON_Duplicate(it, 1));
    cJSON_Delete(extra);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Optional integer key `key` of j in [0, hi] into *v (absent: 0, a recipe from before it). */
static int opt_count(const cJSON *j, const char *key, double hi, const char *source, int64_t *v) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, key);
    *v = 0;
    if (!it) return 0;
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0 && it->valuedouble <= hi) || it->valuedouble != floor(it->valuedouble))
        return gf_fail("%s: the training recipe's \"%s\" must be an integer in [0, %.0f]", source, key, hi);
    *v = (int64_t)it->valuedouble;
    return 0;
}

/* The keys recipes gained after grassflow 0.2: every one optional. */
static int read_later_keys(const cJSON *j, const char *source, gf_train_opts *o) {
    const double big = (double)(1LL << 52);
    if (opt_count(j, "save_every", big, source, &o->save_every) || opt_count(j, "patience", big, source, &o->patience) ||
        opt_count(j, "decay_from", big, source, &o->decay_from))
        return -1;
    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(j, "decay_from_lr");
    if (o->decay_from > 0 && !(cJSON_IsNumber(lr) && lr->valuedouble >= 0 && lr->valuedouble <= 10))
        return gf_fail("%s: the training recipe has \"decay_from\" without a \"decay_from_lr\" in [0, 10]", source);
    o->decay_from_lr = o->decay_from > 0 ? lr->valuedouble : 0.0;
    const cJSON *det = cJSON_GetObjectItemCaseSensitive(j, "deterministic"); /* absent: false */
    if (det && !cJSON_IsBool(det))
        return gf_fail("%s: the training recipe's \"deterministic\" must be true or false", source);
    o->deterministic = det && cJSON_IsTrue(det);
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(j, "precision"); /* absent: fp32 */
    if (prec && !(cJSON_IsString(prec) && !gf_precision_parse(prec->valuestring, &o->precision)))
        return gf_fail("%s: the training recipe's \"precision\" must be \"fp32\" or \"bf16\"", source);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "init_from");
    if (!f) return 0;
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(f, "path"), *h = cJSON_GetObjectItemCaseSensitive(f, "fnv1a64");
    if (!cJSON_IsString(path) || !path->valuestring[0] || strlen(path->valuestring) >= sizeof o->init_from ||
        !cJSON_IsString(h) || opt_count(f, "bytes", big, source, &o->init_from_bytes))
        return gf_fail("%s: the training recipe's \"init_from\" must be {\"path\": ..., \"bytes\": ..., \"fnv1a64\": ...}",
                       source);
    memcpy(o->init_from, path->valuestring, strlen(path->valuestring) + 1);
    o->init_from_fnv1a64 = strtoull(h->valuestring, NULL, 16);
    return 0;
}

int gf_train_opts_from_json(const char *json, const char *source, gf_train_opts *o) {
    cJSON *j = cJSON_Parse(json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return gf_fail("%s: the training recipe is not a JSON object", source);
    }
    gf_train_opts_default(o);
    int rc = 0;
    /* every number checked like the command line checks it: a recipe is read from files too */
#define NUM(f, type, lo, hi)                                                                               \
    do {                                                                                                   \
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f);                                         \
        if (!cJSON_IsNumber(it)) {                                                                         \
            rc = gf_fail("%s: the training recipe lacks \"%s\"", source, #f);                               \
        } else if (!(it->valuedouble >= (double)(lo) && it->valuedouble <= (double)(hi)) ||                \
                   ((type)0.5 == 0 && it->valuedouble != floor(it->valuedouble))) {                         \
            rc = gf_fail("%s: the training recipe's \"%s\" is %g; expected %s in [%.15g, %.15g]", source, #f,      \
                         it->valuedouble, (type)0.5 == 0 ? "an integer" : "a number", (double)(lo),         \
                         (double)(hi));                                                                     \
        } else {                                                                                           \
            o->f = (type)it->valuedouble;                                                                  \
        }                                                                                                  \
    } while (0)
#define STR(f)                                                                                             \
    do {                                                                                                   \
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f);                                         \
        if (!cJSON_IsString(it)) rc = gf_fail("%s: the training recipe lacks \"%s\"", source, #f);          \
        else if (strlen(it->valuestring) >= sizeof o->f)                                                   \
            rc = gf_fail("%s: the training recipe's \"%s\" is longer than %zu bytes", source, #f, sizeof o->f - 1); \
        else memcpy(o->f, it->valuestring, strlen(it->valuestring) + 1);                                   \
    } while (0)
    const double big = (double)(1LL << 52);
    NUM(batch, int64_t, 1, 1 << 20); NUM(steps, int64_t, 0, big);
    NUM(epochs, int64_t, 0, 1000000); NUM(warmup, int64_t, 0, big); NUM(accum, int64_t, 1, 1 << 20);
    NUM(eval_every, int64_t, 0, big); NUM(log_every, int64_t, 1, big);
    NUM(lr, float, 1e-12, 10); NUM(min_lr, float, 0, 10); NUM(wd, float, 0, 10); NUM(clip, float, 0, 1e30);
    NUM(beta1, float, 0, 0.99999995); NUM(beta2, float, 0, 0.99999995); /* the floats below 1 */ NUM(eps, float, 1e-30, 1);
    STR(out_dir); /* the task's part of the recipe (task, corpus, options): gf_task_recipe_from_json */
#undef NUM
#undef STR
    const cJSON *onf = cJSON_GetObjectItemCaseSensitive(j, "on_nonfinite"); /* optional: older runs lack it */
    if (cJSON_IsString(onf) && !strcmp(onf->valuestring, "skip")) o->on_nonfinite = GF_NONFINITE_SKIP;
    else if (onf && !(cJSON_IsString(onf) && !strcmp(onf->valuestring, "stop")))
        rc = gf_fail("%s: the training recipe's \"on_nonfinite\" must be \"stop\" or \"skip\"", source);
    const cJSON *fc = cJSON_GetObjectItemCaseSensitive(j, "feature_cache"); /* absent: a run from before it */
    if (fc && !cJSON_IsBool(fc)) rc = gf_fail("%s: the training recipe's \"feature_cache\" must be true or false", source);
    o->feature_cache = cJSON_IsTrue(fc);
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    if (cJSON_IsString(seed)) o->seed = strtoull(seed->valuestring, NULL, 10);
    else rc = gf_fail("%s: the training recipe lacks \"seed\"", source);
    if (!rc) rc = read_later_keys(j, source, o);
    cJSON_Delete(j);
    return rc;
}
