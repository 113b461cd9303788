/* A Hugging Face DistilBERT folder read by gf_import_load, held to PyTorch (tests/parity/torch_ref/distilbert.py).
 *
 *   import_check DIR REF.safetensors OUT.safetensors
 *
 * REF holds a padded batch (ids, mask: I32 (B, T)) and DistilBERT's last hidden states on it (F64 (B, T, d))
 * from the hand-written PyTorch forward. The imported model's hidden states (gf_model_hidden) must match at
 * every real position within 1e-4 of the largest |h|. The model is then saved to OUT in grassflow's format,
 * for tests/parity/parity.sh to hold its logits, loss and gradients to the generic PyTorch reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

static const gf_st_tensor *need(const gf_st_file *f, const char *name, gf_dtype dt, int ndim) {
    const gf_st_tensor *t = gf_st_find(f, name);
    if (!t || t->dtype != dt || t->ndim != ndim) {
        fprintf(stderr, "import_check: %s: tensor %s missing or of the wrong dtype or rank\n", f->path, name);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: import_check DIR REF.safetensors OUT.safetensors\n");
        return 2;
    }
    gf_tokenizer *tok = NULL;
    gf_model *m = gf_import_load(argv[1], &tok);
    gf_st_file *ref = m ? gf_st_read(argv[2]) : NULL;
    if (!ref) {
        fprintf(stderr, "import_check: %s\n", gf_last_error());
        return 1;
    }
    const gf_st_tensor *ti = need(ref, "ids", GF_DT_I32, 2), *tm = need(ref, "mask", GF_DT_I32, 2);
    const gf_st_tensor *th = need(ref, "hidden", GF_DT_F64, 3);
    const int64_t B = ti->shape[0], T = ti->shape[1], N = B * T;
    int32_t *ids = malloc((size_t)N * sizeof *ids), *mk = malloc((size_t)N * sizeof *mk);
    uint8_t *mask = malloc((size_t)N);
    double *want = malloc((size_t)th->numel * sizeof *want);
    memcpy(ids, ti->data, (size_t)N * sizeof *ids);
    memcpy(mk, tm->data, (size_t)N * sizeof *mk);
    memcpy(want, th->data, (size_t)th->numel * sizeof *want);
    for (int64_t i = 0; i < N; i++) mask[i] = (uint8_t)mk[i];
    gf_batch b = {.B = B, .T = T, .ids = ids, .mask = mask};
    int64_t hB, hT, d;
    const float *h = gf_model_forward_batch(m, &b, NULL) ? NULL : gf_model_hidden(m, &hB, &hT, &d);
    if (!h || d != th->shape[2]) {
        fprintf(stderr, "import_check: forward: %s\n", h ? "hidden width differs from the reference" : gf_last_error());
        return 1;
    }
    double worst = 0.0, scale = 1.0;
    for (int64_t i = 0; i < N * d; i++)
        if (mask[i / d]) scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (int64_t i = 0; i < N * d; i++)
        if (mask[i / d]) { /* a NaN stays the worst (fmax would drop it) */
            const double e = fabs((double)h[i] - want[i]);
            worst = isnan(worst) || isnan(e) ? NAN : fmax(worst, e);
        }
    printf("import_check %s: %s, vocab %lld, hidden states (B=%lld T=%lld d=%lld, padded) max|diff| / max|h| "
           "%.3e (tol 1e-4)\n", argv[1], gf_import_detect(argv[1]) ? gf_import_detect(argv[1]) : "?",
           (long long)(tok ? gf_tokenizer_vocab_size(tok) : -1), (long long)B, (long long)T, (long long)d, worst / scale);
    int rc = worst / scale <= 1e-4 && tok ? 0 : 1;
    if (!rc && gf_model_save(m, argv[3])) {
        fprintf(stderr, "import_check: %s\n", gf_last_error());
        rc = 1;
    }
    free(ids);
    free(mk);
    free(mask);
    free(want);
    gf_st_free(ref);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
