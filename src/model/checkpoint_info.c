/* What a checkpoint file holds, as JSON: gf_checkpoint_describe (grassflow info --ckpt). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/escape.h"
#include "io/safetensors.h"
#include "model/model_internal.h"

/* Metadata key `key` of f added to o under `as`: parsed as JSON when it is JSON (config, recipe), as a number
 * when numeric (step, losses), else as a string. Absent keys are left out. */
static void add_meta(cJSON *o, const gf_st_file *f, const char *key, const char *as, bool json) {
    char *v = gf_st_metadata(f, key);
    if (!v) return;
    cJSON *j = json ? cJSON_Parse(v) : NULL;
    char *end = NULL;
    const double d = json ? 0 : strtod(v, &end);
    if (j) cJSON_AddItemToObject(o, as, j);
    else if (!json && end != v && !*end) cJSON_AddNumberToObject(o, as, d);
    else cJSON_AddStringToObject(o, as, v);
    free(v);
}

/* The tokenizer stored in f, as {"kind", "vocab_size"} (its vocabulary left out), or null. */
static int add_tokenizer(cJSON *o, const gf_st_file *f) {
    char *tj = gf_st_metadata(f, "tokenizer");
    if (!tj) {
        cJSON_AddNullToObject(o, "tokenizer");
        return 0;
    }
    gf_tokenizer *t = gf_tokenizer_from_json(tj, f->path);
    free(tj);
    if (!t) return -1;
    cJSON *tk = cJSON_AddObjectToObject(o, "tokenizer");
    cJSON_AddStringToObject(tk, "kind", gf_tok_kind_name(gf_tokenizer_kind(t)));
    cJSON_AddNumberToObject(tk, "vocab_size", (double)gf_tokenizer_vocab_size(t));
    gf_tokenizer_free(t);
    return 0;
}

/* A model checkpoint is read as gf_model_load reads it (every tensor present, of its shape, finite); a
 * training state's arenas must hold the config's parameter count. */
static int add_model(cJSON *o, const gf_st_file *f, bool state) {
    char *cj = gf_st_metadata(f, "config");
    if (!cj) return gf_fail("%s: no __metadata__[\"config\"]; this is not a grassflow checkpoint", gf_show_name(f->path));
    gf_config cfg;
    int rc = gf_config_from_json(cj, f->path, &cfg);
    free(cj);
    if (rc) return -1;
    const int64_t n = gf_config_num_params(&cfg);
    if (state) {
        const gf_st_tensor *p = gf_st_find(f, "params");
        if (!p || p->ndim != 1 || p->shape[0] != n)
            return gf_fail("%s: a training state whose params do not hold the %lld parameters of its config", gf_show_name(f->path),
                           (long long)n);
    } else {
        gf_model *m = gf_model_from_safetensors(f);
        if (!m) return -1;
        cJSON_AddStringToObject(o, "weights", gf_weights_name(gf_model_weights(m)));
        gf_model_free(m);
    }
    char *canon = gf_config_to_json(&cfg, false);
    cJSON_AddItemToObject(o, "config", canon ? cJSON_Parse(canon) : cJSON_CreateNull());
    free(canon);
    cJSON_AddNumberToObject(o, "params", (double)n);
    cJSON_AddStringToObject(o, "head", cfg.head_kind);
    return 0;
}

char *gf_checkpoint_describe(const char *path) {
    gf_st_file *f = gf_st_read(path);
    if (!f) return NULL;
    const bool state = gf_st_find(f, "params") && gf_st_find(f, "adam_m") && gf_st_find(f, "adam_v");
    cJSON *o = cJSON_CreateObject();
    char *out = NULL;
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddStringToObject(o, "kind", state ? "training state" : "model");
    cJSON_AddNumberToObject(o, "bytes", (double)f->size);
    add_meta(o, f, "producer", "producer", false);
    if (add_model(o, f, state) || add_tokenizer(o, f)) goto done;
    add_meta(o, f, "train", "recipe", true);
    cJSON *r = cJSON_GetObjectItem(o, "recipe");
    cJSON *task = r ? cJSON_GetObjectItem(r, "task") : NULL;
    cJSON_AddStringToObject(o, "task", cJSON_IsString(task) ? task->valuestring : r ? "lm" : "none recorded");
    add_meta(o, f, "step", "step", false);
    add_meta(o, f, state ? "best_val_loss" : "val_loss", state ? "best_val_loss" : "val_loss", false);
    if (state) add_meta(o, f, "best_val_acc", "best_val_acc", false);
    if (state) add_meta(o, f, "data", "data", true);
    if (state) add_meta(o, f, "frozen", "frozen", true);
    out = gf_json_utf8(cJSON_PrintUnformatted(o)); /* a path or a forged string that is not UTF-8: U+FFFD */
    if (!out) gf_fail("out of memory describing %s", gf_show_name(path));
done:
    cJSON_Delete(o);
    gf_st_free(f);
    return out;
}
