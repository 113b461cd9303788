/* A language model another program saved, read by gf_import_load, held to that program's own forward in PyTorch
 * (tests/parity/torch_ref/alphaxiv.py).
 *
 *   lm_import_check FILE REF.safetensors [--bits OTHER]
 *
 * REF holds a batch of ids (I64 (B, T)) and the logits the reference computed on it (F64 (B, T, V)). The imported
 * model's logits must match within 1e-5 of the largest |logit|. With --bits OTHER, the logits of the model that
 * OTHER holds (its grassflow checkpoint, written by grassflow import) must equal FILE's bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

static float *logits_of(const char *path, const gf_st_tensor *ti, int64_t *V) {
    gf_tokenizer *tok = NULL;
    gf_model *m = gf_import_load(path, &tok);
    const int64_t B = ti->shape[0], T = ti->shape[1];
    int32_t *ids = malloc((size_t)(B * T) * sizeof *ids);
    for (int64_t i = 0; i < B * T; i++) {
        int64_t v;
        memcpy(&v, (const char *)ti->data + 8 * i, 8);
        ids[i] = (int32_t)v;
    }
    gf_batch b = {.B = B, .T = T, .ids = ids};
    float *out = NULL;
    if (m && !gf_model_forward_batch(m, &b, NULL)) {
        *V = gf_model_config(m)->vocab_size;
        out = malloc((size_t)(B * T * *V) * sizeof *out);
        memcpy(out, gf_model_logits(m), (size_t)(B * T * *V) * sizeof *out);
    }
    if (!out) fprintf(stderr, "lm_import_check: %s: %s\n", path, gf_last_error());
    free(ids);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return out;
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 5 && !strcmp(argv[3], "--bits"))) {
        fprintf(stderr, "usage: lm_import_check FILE REF.safetensors [--bits OTHER]\n");
        return 2;
    }
    gf_st_file *ref = gf_st_read(argv[2]);
    const gf_st_tensor *ti = ref ? gf_st_find(ref, "ids") : NULL, *tl = ref ? gf_st_find(ref, "logits") : NULL;
    if (!ti || !tl || ti->dtype != GF_DT_I64 || tl->dtype != GF_DT_F64) {
        fprintf(stderr, "lm_import_check: %s: no I64 ids and F64 logits\n", argv[2]);
        return 1;
    }
    int64_t V = 0, V2 = 0;
    float *got = logits_of(argv[1], ti, &V), *other = argc == 5 && got ? logits_of(argv[4], ti, &V2) : NULL;
    if (!got || (argc == 5 && !other) || V != tl->shape[2]) return 1;
    const double *want = (const double *)tl->data;
    double worst = 0.0, scale = 0.0;
    for (int64_t i = 0; i < tl->numel; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < tl->numel; i++) {
        const double e = fabs((double)got[i] - want[i]);
        worst = isnan(worst) || isnan(e) ? NAN : fmax(worst, e);
    }
    const bool same = !other || !memcmp(got, other, (size_t)tl->numel * sizeof *got);
    printf("lm_import_check %s: logits (B=%lld T=%lld V=%lld) max|diff| / max|logit| %.3e (tol 1e-5)%s\n", argv[1],
           (long long)tl->shape[0], (long long)tl->shape[1], (long long)V, worst / scale,
           other ? same ? "; its grassflow checkpoint gives the same bits" : "; its grassflow checkpoint DIFFERS" : "");
    free(got);
    free(other);
    gf_st_free(ref);
    return worst / scale <= 1e-5 && same ? 0 : 1;
}
