/* int8 and bf16 checkpoints: reading their tensors (with every check a forged file needs), and
 * gf_checkpoint_quantize. Their layout is GF_WEIGHTS_LAYOUT, stored in every such file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compute/lowp.h"
#include "io/safetensors.h"
#include "model/model_internal.h"

const char GF_WEIGHTS_LAYOUT[] =
    "int8: every weight matrix NAME (rows x cols; the 2-D trainable tensors but pos_emb and seg_emb) is I8 codes "
    "q in [-127, 127] with NAME.scale (F32, rows): w[r][c] = q[r][c] * scale[r]; bf16: every such matrix is BF16 "
    "(the upper half of its float32 bits); every other tensor is F32, as in an fp32 checkpoint";

int gf_lowp_file_kind(const gf_st_file *f, gf_weights *kind) {
    char *w = gf_st_metadata(f, "weights");
    *kind = GF_WEIGHTS_FP32;
    const int bad = w && gf_weights_parse(w, kind);
    if (bad) gf_fail("%s: __metadata__[\"weights\"] is \"%.40s\"; expected fp32, bf16 or int8", gf_show_name(f->path), w);
    free(w);
    return bad ? -1 : 0;
}

int gf_lowp_check_tensor(const gf_st_file *f, gf_weights kind, const char *name, int ndim, const int64_t *shape,
                         const gf_st_tensor *s, int *scale_index) {
    const char *path = f->path, *dt = s->dtype == GF_DT_I8 ? "I8" : "BF16";
    *scale_index = -1;
    if (kind == GF_WEIGHTS_FP32)
        return gf_fail("%s: tensor \"%s\" is %s, but the file does not say its weights are int8 or bf16 (no "
                       "__metadata__[\"weights\"])", gf_show_name(path), name, dt);
    if ((kind == GF_WEIGHTS_INT8) != (s->dtype == GF_DT_I8))
        return gf_fail("%s: tensor \"%s\" is %s, but the file says its weights are %s", gf_show_name(path), name, dt,
                       gf_weights_name(kind));
    if (ndim != 2 || s->ndim != 2 || s->shape[0] != shape[0] || s->shape[1] != shape[1])
        return gf_fail("%s: tensor \"%s\" is %s of %d dimensions; for this config it is %s (only weight matrices can "
                       "be %s)", gf_show_name(path), name, dt, s->ndim, ndim == 2 ? "a matrix of another shape" : "not a matrix", dt);
    if (kind != GF_WEIGHTS_INT8) return 0;
    char sname[300];
    snprintf(sname, sizeof sname, "%s.scale", name);
    const gf_st_tensor *sc = gf_st_find(f, sname);
    if (!sc || sc->dtype != GF_DT_F32 || sc->ndim != 1 || sc->shape[0] != shape[0])
        return gf_fail("%s: tensor \"%s\" is I8, and its scales \"%s\" should be F32 of shape (%lld), one per row; "
                       "the file has %s", gf_show_name(path), name, sname, (long long)shape[0], sc ? "another dtype or shape" : "none");
    *scale_index = (int)(sc - f->tensors);
    return 0;
}

/* t from I8 codes and F32 scales: the codes in [-127, 127], the scales finite and >= 0, and every weight (code
 * times scale) finite in float32. */
static int load_int8(gf_model *m, const gf_st_file *f, const gf_tensor_info *t, const gf_st_tensor *s) {
    const int64_t R = t->shape[0], C = t->shape[1];
    char sname[300];
    snprintf(sname, sizeof sname, "%s.scale", t->name);
    const gf_st_tensor *sc = gf_st_find(f, sname); /* checked by gf_lowp_check_tensor */
    const int8_t *q = s->data;
    uint8_t *u8 = malloc((size_t)(R * C));
    float *scale = malloc((size_t)R * sizeof *scale);
    if (!u8 || !scale || C > GF_LOWP_MAX_COLS) {
        free(u8), free(scale);
        return C > GF_LOWP_MAX_COLS ? gf_fail("%s: \"%s\" has %lld columns; int8 weights take at most %d", gf_show_name(f->path),
                                             t->name, (long long)C, GF_LOWP_MAX_COLS)
                                    : gf_fail("out of memory reading %s", gf_show_name(f->path));
    }
    memcpy(scale, sc->data, (size_t)R * sizeof *scale);
    for (int64_t r = 0; r < R; r++) {
        if (!(isfinite(scale[r]) && scale[r] >= 0.0f)) {
            gf_fail("%s: \"%s\" row %lld has scale %g; scales are finite and >= 0", gf_show_name(f->path), sname, (long long)r,
                    (double)scale[r]);
            free(u8), free(scale);
            return -1;
        }
        for (int64_t c = 0; c < C; c++) {
            if (q[r * C + c] == -128) {
                free(u8), free(scale);
                return gf_fail("%s: \"%s\" holds the code -128 at [%lld][%lld]; int8 codes are in [-127, 127]",
                               gf_show_name(f->path), t->name, (long long)r, (long long)c);
            }
            u8[r * C + c] = (uint8_t)(q[r * C + c] + 128);
            t->data[r * C + c] = (float)q[r * C + c] * scale[r];
            if (!isfinite(t->data[r * C + c])) { /* a finite scale whose weight is not: refused, as an inf weight is */
                gf_fail("%s: \"%s\" row %lld has scale %g: its code %d at [%lld][%lld] times it is past float32's "
                        "largest (3.4e38), an infinite weight; a scale is at most 3.4e38 / 127 (2.7e36) for codes up "
                        "to 127\nHINT: the file is corrupt or forged; quantize the fp32 checkpoint again",
                        gf_show_name(f->path), sname, (long long)r, (double)scale[r], q[r * C + c], (long long)r, (long long)c);
                free(u8), free(scale);
                return -1;
            }
        }
    }
    return gf_model_attach_lowp(m, t, GF_WEIGHTS_INT8, u8, scale, NULL);
}

static int load_bf16(gf_model *m, const gf_st_file *f, const gf_tensor_info *t, const gf_st_tensor *s) {
    uint16_t *h = malloc((size_t)t->numel * sizeof *h);
    if (!h) return gf_fail("out of memory reading %s", gf_show_name(f->path));
    memcpy(h, s->data, (size_t)t->numel * sizeof *h);
    for (int64_t i = 0; i < t->numel; i++) t->data[i] = gf_bf16_to_f32(h[i]);
    if (gf_st_check_finite(f->path, t->name, t->data, t->numel, "the checkpoint is corrupt")) {
        free(h);
        return -1;
    }
    return gf_model_attach_lowp(m, t, GF_WEIGHTS_BF16, NULL, NULL, h);
}

int gf_lowp_load_tensor(gf_model *m, const gf_st_file *f, const gf_tensor_info *t, const gf_st_tensor *s) {
    if (!gf_weights_eligible(t))
        return gf_fail("%s: tensor \"%s\" is %s; only the weight matrices (gf_model_set_weights's) can be", gf_show_name(f->path),
                       t->name, s->dtype == GF_DT_I8 ? "I8" : "BF16");
    return s->dtype == GF_DT_I8 ? load_int8(m, f, t, s) : load_bf16(m, f, t, s);
}

/* ---- gf_checkpoint_quantize ------------------------------------------------------------------------------- */

/* The metadata of f but format, config, producer and the weights keys (gf_model_save_meta writes those). */
static int other_metadata(const gf_st_file *f, cJSON **j, const char **keys, const char **vals, int cap, int *n) {
    static const char *const own[] = {"format", "config", "producer", "weights", "weights_layout", NULL};
    *n = 0;
    *j = f->metadata_json ? cJSON_Parse(f->metadata_json) : NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, *j) {
        bool skip = !cJSON_IsString(it);
        for (int k = 0; own[k] && !skip; k++) skip = !strcmp(it->string, own[k]);
        if (skip) continue;
        if (*n == cap) return gf_fail("%s: more metadata entries than a checkpoint carries (%d)", gf_show_name(f->path), cap);
        keys[*n] = it->string, vals[(*n)++] = it->valuestring;
    }
    return 0;
}

int gf_checkpoint_quantize(const char *in, const char *out, gf_weights w) {
    if (w != GF_WEIGHTS_INT8 && w != GF_WEIGHTS_BF16)
        return gf_fail("quantize: the weights are made int8 or bf16, not %s", gf_weights_name(w));
    gf_st_file *f = gf_st_read(in);
    if (!f) return -1;
    gf_model *m = gf_model_from_safetensors(f);
    cJSON *j = NULL;
    const char *keys[11], *vals[11];
    int n = 0, rc = m ? 0 : -1;
    if (!rc && gf_model_weights(m) != GF_WEIGHTS_FP32)
        rc = gf_fail("%s holds %s weights already; quantize an fp32 checkpoint", in, gf_weights_name(gf_model_weights(m)));
    if (!rc) rc = other_metadata(f, &j, keys, vals, 11, &n);
    if (!rc) rc = gf_model_set_weights(m, w);
    if (!rc) rc = gf_model_save_meta(m, out, keys, vals, n);
    cJSON_Delete(j);
    gf_model_free(m);
    gf_st_free(f);
    return rc;
}
