/* Model checkpoints in safetensors: F32 tensors under their PyTorch names, config in the metadata (int8 and
 * bf16 weight matrices: model/checkpoint_lowp.c). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "import/import.h"
#include "io/safetensors.h"
#include "model/model_internal.h"

int gf_model_save(const gf_model *m, const char *path) { return gf_model_save_meta(m, path, NULL, NULL, 0); }

/* Tensor t as the file stores it: F32, or its int8 codes (into *q, malloc'd, with the scales as a second
 * tensor named into sname) or bf16 copy. The number of entries written to ts (1 or 2). */
static int tensor_out(const gf_model *m, const gf_tensor_info *t, gf_st_out *ts, int8_t **q, char *sname, size_t n) {
    const uint8_t *u8;
    const float *scale;
    const uint16_t *h;
    ts[0] = (gf_st_out){.name = t->name, .dtype = GF_DT_F32, .ndim = t->ndim, .data = t->data,
                        .shape = {t->shape[0], t->shape[1]}};
    if (!gf_model_lowp_of(m, t, &u8, &scale, &h)) return 1;
    if (h) {
        ts[0].dtype = GF_DT_BF16, ts[0].data = h;
        return 1;
    }
    if (!(*q = malloc((size_t)t->numel))) return -1;
    for (int64_t i = 0; i < t->numel; i++) (*q)[i] = (int8_t)(u8[i] - 128);
    ts[0].dtype = GF_DT_I8, ts[0].data = *q;
    snprintf(sname, n, "%s.scale", t->name);
    ts[1] = (gf_st_out){.name = sname, .dtype = GF_DT_F32, .ndim = 1, .data = scale, .shape = {t->shape[0]}};
    return 2;
}

int gf_model_save_meta(const gf_model *m, const char *path, const char *const *extra_keys,
                       const char *const *extra_vals, int n_extra) {
    const int cap = 2 * m->n_tensors; /* an int8 matrix adds its scales */
    gf_st_out *ts = calloc((size_t)cap, sizeof *ts);
    int8_t **q = calloc((size_t)m->n_tensors, sizeof *q);
    char *snames = calloc((size_t)m->n_tensors, 300);
    char *cfg = gf_config_to_json(&m->cfg, false);
    int n = 0, rc = ts && q && snames && cfg ? 0 : -1;
    for (int i = 0; !rc && i < m->n_tensors; i++) {
        const int k = tensor_out(m, &m->tensors[i], ts + n, &q[i], snames + 300 * (size_t)i, 300);
        if (k < 0) rc = -1;
        else n += k;
    }
    if (!rc) {
        const char *keys[16] = {"format", "config", "producer"};
        const char *vals[16] = {"pt", cfg, "grassflow " GF_VERSION};
        int n_meta = 3;
        if (m->weights != GF_WEIGHTS_FP32) {
            keys[n_meta] = "weights", vals[n_meta++] = gf_weights_name((gf_weights)m->weights);
            keys[n_meta] = "weights_layout", vals[n_meta++] = GF_WEIGHTS_LAYOUT;
        }
        for (int i = 0; i < n_extra && n_meta < 16; i++, n_meta++) {
            keys[n_meta] = extra_keys[i];
            vals[n_meta] = extra_vals[i];
        }
        rc = gf_st_write(path, ts, n, keys, vals, n_meta);
    } else {
        gf_fail("out of memory saving %s", gf_show_name(path));
    }
    for (int i = 0; q && i < m->n_tensors; i++) free(q[i]);
    free(q);
    free(snames);
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
    gf_weights kind; /* the file's "weights": int8 and bf16 files hold I8 (+ scales) or BF16 matrices */
    bool *seen;      /* per file tensor: the config declares it (or it is the scales of one) */
} file_check;

/* A tensor the config declares must be in the file, F32 (or I8 or BF16 in such a file), of its shape. */
static int check_tensor(void *ctx, const char *name, int ndim, const int64_t *shape) {
    file_check *fc = ctx;
    const char *path = fc->f->path;
    const gf_st_tensor *s = gf_st_find(fc->f, name);
    if (s) fc->seen[s - fc->f->tensors] = true;
    if (!s) return gf_fail("%s: tensor \"%s\" is missing (the config in the file says the model has it)", gf_show_name(path), name);
    if (s->dtype == GF_DT_I8 || s->dtype == GF_DT_BF16) {
        int scale = -1;
        if (gf_lowp_check_tensor(fc->f, fc->kind, name, ndim, shape, s, &scale)) return -1;
        if (scale >= 0) fc->seen[scale] = true;
        return 0;
    }
    bool same = s->dtype == GF_DT_F32 && s->ndim == ndim;
    for (int k = 0; same && k < ndim; k++) same = s->shape[k] == shape[k];
    if (same) return 0;
    char want[64], got[128] = "";
    if (ndim == 2) snprintf(want, sizeof want, "(%lld, %lld)", (long long)shape[0], (long long)shape[1]);
    else snprintf(want, sizeof want, "(%lld)", (long long)shape[0]);
    for (int k = 0; k < s->ndim && k < 4; k++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)s->shape[k]);
    return gf_fail("%s: tensor \"%s\" should be F32 of shape %s for this config, but the file has %s of shape (%s)",
                   gf_show_name(path), name, want, s->dtype == GF_DT_F32 ? "F32" : "another dtype", got);
}

/* The file holds exactly the config's tensors, of the right shapes: checked before anything is allocated,
 * so a small forged file cannot make the loader allocate what its config claims. */
static int check_file(const gf_st_file *f, const gf_config *cfg) {
    if (gf_st_find(f, "adam_m") && gf_st_find(f, "params") && !gf_st_find(f, "tok_emb.weight"))
        return gf_fail("%s is a training state (weights and optimizer moments for --resume), not a checkpoint\nHINT: "
                       "give the run's last.safetensors or best.safetensors, or continue it with grassflow train "
                       "--resume DIR", gf_show_name(f->path));
    file_check fc = {.f = f};
    if (gf_lowp_file_kind(f, &fc.kind)) return -1;
    fc.seen = calloc((size_t)f->n_tensors + 1, sizeof(bool));
    if (!fc.seen) return gf_fail("out of memory reading %s", gf_show_name(f->path));
    int rc = gf_model_plan(cfg, check_tensor, &fc);
    for (int i = 0; !rc && i < f->n_tensors; i++)
        if (!fc.seen[i])
            rc = gf_fail("%s: unexpected tensor \"%s\" that the config's model does not have", gf_show_name(f->path),
                         f->tensors[i].name);
    free(fc.seen);
    return rc;
}

/* Every tensor of f into m (checked by check_file): F32 copied, I8 and BF16 ones through model/checkpoint_lowp.c;
 * an int8 or bf16 file must have every weight matrix so. */
static int load_tensors(gf_model *m, const gf_st_file *f) {
    for (int i = 0; i < m->n_tensors; i++) {
        const gf_tensor_info *t = &m->tensors[i];
        const gf_st_tensor *s = gf_st_find(f, t->name);
        if (s->dtype != GF_DT_F32) {
            if (gf_lowp_load_tensor(m, f, t, s)) return -1;
            continue;
        }
        memcpy(t->data, s->data, (size_t)t->numel * sizeof(float));
        if (gf_st_check_finite(f->path, t->name, t->data, t->numel,
                               "the checkpoint is corrupt (or was saved from a diverged run)\nHINT: use an earlier "
                               "checkpoint"))
            return -1;
    }
    gf_weights kind;
    gf_lowp_file_kind(f, &kind); /* checked by check_file */
    for (int i = 0; kind != GF_WEIGHTS_FP32 && i < m->n_tensors; i++) {
        const uint8_t *u8;
        const float *sc;
        const uint16_t *h;
        if (gf_weights_eligible(&m->tensors[i]) && !gf_model_lowp_of(m, &m->tensors[i], &u8, &sc, &h))
            return gf_fail("%s: the file says its weights are %s, but the weight matrix \"%s\" is F32", gf_show_name(f->path),
                           gf_weights_name(kind), m->tensors[i].name);
    }
    return 0;
}

gf_model *gf_model_from_safetensors(const gf_st_file *f) {
    const char *path = f->path;
    gf_model *m = NULL;
    char *cfg_json = gf_st_metadata(f, "config");
    if (!cfg_json) {
        gf_fail("%s: no __metadata__[\"config\"]; this is not a grassflow checkpoint\nHINT: checkpoints come "
                "from `grassflow init` or `grassflow train`", gf_show_name(path));
        gf_import_misplaced(path, true); /* DIR/model.safetensors of a folder an importer reads: say so */
        goto done;
    }
    char src[1100];
    snprintf(src, sizeof src, "%.1000s (config in __metadata__)", path);
    gf_config cfg;
    if (gf_config_from_json(cfg_json, src, &cfg) || check_file(f, &cfg)) goto done;
    m = gf_model_create(&cfg);
    if (!m) goto done;
    if (load_tensors(m, f)) {
        gf_model_free(m);
        m = NULL;
    }
done:
    free(cfg_json);
    return m;
}
