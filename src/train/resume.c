/* A saved run read back for --resume: what its state says (config, the trainer's and the task's recipe, the
 * tokenizer, the tensors it froze), and its model rebuilt with those tensors frozen again. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"
#include "io/text.h"
#include "train/trainer.h"

void gf_run_info_free(gf_run_info *info) {
    if (!info) return;
    gf_tokenizer_free(info->tokenizer);
    free(info->frozen_json);
    info->tokenizer = NULL;
    info->frozen_json = NULL;
}

/* The metadata of state file f into info; 0 or -1 naming path. */
static int read_meta(const gf_st_file *f, const char *path, gf_run_info *info) {
    char *cj = gf_st_metadata(f, "config"), *rj = gf_st_metadata(f, "train"), *tj = gf_st_metadata(f, "tokenizer");
    int rc = !cj || !rj ? gf_fail("%s: it has no config or training recipe (metadata \"config\", \"train\")", path)
                        : 0;
    if (!rc) rc = gf_config_from_json(cj, path, &info->config);
    if (!rc) rc = gf_train_opts_from_json(rj, path, &info->train);
    if (!rc) rc = gf_task_recipe_from_json(rj, path, &info->task);
    if (!rc && tj && !(info->tokenizer = gf_tokenizer_from_json(tj, path))) rc = -1;
    if (!rc) info->frozen_json = gf_st_metadata(f, "frozen"); /* absent: nothing frozen */
    free(cj);
    free(rj);
    free(tj);
    return rc;
}

int gf_run_read(const char *dir, gf_run_info *info) {
    memset(info, 0, sizeof *info);
    char path[GF_PATH_MAX];
    if (strlen(dir) >= sizeof info->train.out_dir)
        return gf_fail("run folder %.200s...: longer than %d bytes", dir, GF_PATH_MAX - 1);
    if (gf_path_join(path, sizeof path, dir, "state.safetensors")) return -1;
    gf_st_file *f = gf_st_read(path);
    if (!f) {
        gf_fail_context("\nHINT: a run folder is the --out directory of an earlier run");
        return -1;
    }
    int rc = read_meta(f, path, info);
    gf_st_free(f);
    if (rc) {
        char why[2048]; /* gf_fail must not read the buffer it writes */
        snprintf(why, sizeof why, "%s", gf_last_error());
        gf_run_info_free(info);
        const size_t n = strlen(path); /* the reason without its own "PATH: " */
        const char *reason = !strncmp(why, path, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why;
        return gf_fail("%s: cannot resume: %s", path, reason);
    }
    snprintf(info->train.out_dir, sizeof info->train.out_dir, "%s", dir); /* fits: checked above */
    return 0;
}

/* Freeze again each tensor of the JSON list (what the saved state froze). */
static int refreeze(gf_model *m, const char *frozen_json) {
    cJSON *a = cJSON_Parse(frozen_json);
    int rc = cJSON_IsArray(a) ? 0 : gf_fail("the saved state's list of frozen tensors is not a JSON array");
    const cJSON *it;
    cJSON_ArrayForEach(it, a) {
        if (rc) break;
        if (!cJSON_IsString(it) || !gf_model_find_tensor(m, it->valuestring))
            rc = gf_fail("the saved state freezes a tensor this model does not have");
        else if (gf_model_freeze(m, it->valuestring) < 0)
            rc = -1;
    }
    cJSON_Delete(a);
    return rc;
}

gf_model *gf_run_model(const gf_run_info *info) {
    gf_model *m = gf_model_create(&info->config);
    if (!m) return NULL;
    gf_model_init(m, info->train.seed);
    if (info->frozen_json && refreeze(m, info->frozen_json)) {
        gf_model_free(m);
        return NULL;
    }
    return m;
}

/* The size and FNV-1a 64 of a file's bytes (the standard hash of the whole file: each chunk's hash goes on
 * from the last, gf_hash_bytes starting from its seed xor the offset basis). */
static int file_fnv1a64(const char *path, int64_t *bytes, uint64_t *hash) {
    FILE *f = fopen(path, "rb");
    if (!f) return gf_fail("cannot open %s: %s", path, strerror(errno));
    static const uint64_t basis = 0xcbf29ce484222325ull;
    unsigned char buf[1 << 16];
    uint64_t h = basis;
    int64_t total = 0;
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0; total += (int64_t)n) h = gf_hash_bytes(buf, n, h ^ basis);
    const int bad = ferror(f);
    fclose(f);
    if (bad) return gf_fail("cannot read %s", path);
    *bytes = total;
    *hash = h;
    return 0;
}

gf_model *gf_run_init_from(const char *ckpt, gf_tokenizer **tok, gf_train_opts *o) {
    *tok = NULL;
    if (strlen(ckpt) >= sizeof o->init_from)
        return gf_fail("--init-from %.200s...: longer than %d bytes", ckpt, GF_PATH_MAX - 1), NULL;
    gf_model *m = gf_checkpoint_load(ckpt, tok, NULL);
    if (m && file_fnv1a64(ckpt, &o->init_from_bytes, &o->init_from_fnv1a64)) {
        gf_model_free(m);
        gf_tokenizer_free(*tok);
        *tok = NULL;
        return NULL;
    }
    if (m) snprintf(o->init_from, sizeof o->init_from, "%s", ckpt); /* fits: checked above */
    if (m && gf_model_weights(m) != GF_WEIGHTS_FP32)
        gf_note("%s holds %s weight matrices (grassflow quantize): the run starts from the values they stand for, "
                "and trains in fp32", ckpt, gf_weights_name(gf_model_weights(m)));
    return m;
}
