/* Model checkpoints in safetensors: F32 tensors under their PyTorch names, config in the metadata. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "import/import.h"
#include "io/safetensors.h"
#include "model/model_internal.h"

int gf_model_save(const gf_model *m, const char *path) { return gf_model_save_meta(m, path, NULL, NULL, 0); }

int gf_model_save_meta(const gf_model *m, const char *path, const char *const *extra_keys,
                       const char *const *extra_vals, int n_extra) {
    gf_st_out *ts = calloc((size_t)m->n_tensors, sizeof *ts);
    char *cfg = gf_config_to_json(&m->cfg, false);
    if (!ts || !cfg) {
        free(ts);
        free(cfg);
        return gf_fail("out of memory saving %s", path);
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const gf_tensor_info *t = &m->tensors[i];
        ts[i] = (gf_st_out){.name = t->name, .dtype = GF_DT_F32, .ndim = t->ndim, .data = t->data};
        ts[i].shape[0] = t->shape[0];
        ts[i].shape[1] = t->shape[1];
    }
    const char *keys[16] = {"format", "config", "producer"};
    const char *vals[16] = {"pt", cfg, "grassflow " GF_VERSION};
    int n_meta = 3;
    for (int i = 0; i < n_extra && n_meta < 16; i++, n_meta++) {
        keys[n_meta] = extra_keys[i];
        vals[n_meta] = extra_vals[i];
    }
    int rc = gf_st_write(path, ts, m->n_tensors, keys, vals, n_meta);
    free(ts);
    free(cfg);
    return rc;
}

gf_model *gf_model_load(const char *path) {
    gf_st_file *f = gf_st_read(path);
    if (!f) {
        gf_import_misplaced(path, false);
        return NULL;
    }
    gf_model *m = gf_model_from_safetensors(f);
    gf_st_free(f);
    return m;
}

typedef struct {
    const gf_st_file *f;
    bool *seen; /* per file tensor: the config declares it */
} file_check;

/* A tensor the config declares must be in the file, F32, of its shape. */
static int check_tensor(void *ctx, const char *name, int ndim, const int64_t *shape) {
    file_check *fc = ctx;
    const char *path = fc->f->path;
    const gf_st_tensor *s = gf_st_find(fc->f, name);
    if (s) fc->seen[s - fc->f->tensors] = true;
    if (!s) return gf_fail("%s: tensor \"%s\" is missing (the config in the file says the model has it)", path, name);
    bool same = s->dtype == GF_DT_F32 && s->ndim == ndim;
    for (int k = 0; same && k < ndim; k++) same = s->shape[k] == shape[k];
    if (same) return 0;
    char want[64], got[128] = "";
    if (ndim == 2) snprintf(want, sizeof want, "(%lld, %lld)", (long long)shape[0], (long long)shape[1]);
    else snprintf(want, sizeof want, "(%lld)", (long long)shape[0]);
    for (int k = 0; k < s->ndim && k < 4; k++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)s->shape[k]);
    return gf_fail("%s: tensor \"%s\" should be F32 of shape %s for this config, but the file has %s of shape (%s)",
                   path, name, want, s->dtype == GF_DT_F32 ? "F32" : "another dtype", got);
}

/* The file holds exactly the config's tensors, of the right shapes: checked before anything is allocated,
 * so a small forged file cannot make the loader allocate what its config claims. */
static int check_file(const gf_st_file *f, const gf_config *cfg) {
    if (gf_st_find(f, "adam_m") && gf_st_find(f, "params") && !gf_st_find(f, "tok_emb.weight"))
        return gf_fail("%s is a training state (weights and optimizer moments for --resume), not a checkpoint\nHINT: "
                       "give the run's last.safetensors or best.safetensors, or continue it with grassflow train "
                       "--resume DIR", f->path);
    file_check fc = {.f = f, .seen = calloc((size_t)f->n_tensors + 1, sizeof(bool))};
    if (!fc.seen) return gf_fail("out of memory reading %s", f->path);
    int rc = gf_model_plan(cfg, check_tensor, &fc);
    for (int i = 0; !rc && i < f->n_tensors; i++)
        if (!fc.seen[i])
            rc = gf_fail("%s: unexpected tensor \"%s\" that the config's model does not have", f->path,
                         f->tensors[i].name);
    free(fc.seen);
    return rc;
}

gf_model *gf_model_from_safetensors(const gf_st_file *f) {
    const char *path = f->path;
    gf_model *m = NULL;
    char *cfg_json = gf_st_metadata(f, "config");
    if (!cfg_json) {
        gf_fail("%s: no __metadata__[\"config\"]; this is not a grassflow checkpoint\nHINT: checkpoints come "
                "from `grassflow init` or `grassflow train`", path);
        gf_import_misplaced(path, true); /* DIR/model.safetensors of a folder an importer reads: say so */
        goto done;
    }
    char src[1100];
    snprintf(src, sizeof src, "%.1000s (config in __metadata__)", path);
    gf_config cfg;
    if (gf_config_from_json(cfg_json, src, &cfg) || check_file(f, &cfg)) goto done;
    m = gf_model_create(&cfg);
    if (!m) goto done;
    for (int i = 0; i < m->n_tensors; i++) {
        const gf_tensor_info *t = &m->tensors[i];
        const gf_st_tensor *s = gf_st_find(f, t->name);
        memcpy(t->data, s->data, (size_t)t->numel * sizeof(float));
        if (gf_st_check_finite(path, t->name, t->data, t->numel,
                               "the checkpoint is corrupt (or was saved from a diverged run)\nHINT: use an earlier "
                               "checkpoint")) {
            gf_model_free(m);
            m = NULL;
            goto done;
        }
    }
done:
    free(cfg_json);
    return m;
}
