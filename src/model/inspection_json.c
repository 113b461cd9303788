/* An inspection as JSON (gf_inspection_to_json; the schema: docs/usage.md, "grassflow inspect"). Floats are
 * written as their shortest decimal (gf_float_shortest), a number that is not finite as null (cJSON's rule,
 * which every JSON grassflow writes follows: io/json_out.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/json_out.h"
#include "model/model_internal.h"

/* The JSON schema's version: "grassflow_inspect" at the head of the object, what an output file is known by. */
#define INSPECT_JSON_VERSION 1

static cJSON *num(double v) { return cJSON_CreateNumber(v); }
static cJSON *fnum(float v) { return cJSON_CreateNumber(isfinite(v) ? gf_float_shortest(v) : (double)v); }

/* x[0..n) as a list, each minus `minus` (0, or a loss: a change of loss). */
static cJSON *row(const float *x, int64_t n, double minus) {
    cJSON *a = cJSON_CreateArray();
    for (int64_t j = 0; a && j < n; j++) cJSON_AddItemToArray(a, fnum(minus != 0 ? (float)((double)x[j] - minus) : x[j]));
    return a;
}

/* rows x cols floats as a list of rows. */
static cJSON *matrix(const float *x, int64_t rows, int64_t cols) {
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; a && i < rows; i++) cJSON_AddItemToArray(a, row(x + i * cols, cols, 0));
    return a;
}

static cJSON *ints(const int *x, int64_t n) {
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, num(x[i]));
    return a;
}

/* The k largest of v[0..n) (ties: the lower index first) into idx[0..*k): an insertion into a short list. */
static int top_k(const float *v, int64_t n, int k, int64_t *idx) {
    int have = 0;
    for (int64_t c = 0; c < n; c++) {
        if (have == k && !(v[c] > v[idx[k - 1]])) continue;
        int at = have < k ? have++ : k - 1;
        for (; at > 0 && v[c] > v[idx[at - 1]]; at--) idx[at] = idx[at - 1];
        idx[at] = c;
    }
    return have;
}

/* The coordinates idx[0..n) as [{"i", "j", "value"}, ...]. */
static cJSON *coord_list(const gf_inspect_layer *L, const int64_t *idx, int n, const float *v) {
    cJSON *a = cJSON_CreateArray();
    for (int q = 0; a && q < n; q++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "i", num(L->coord_i[idx[q]]));
        cJSON_AddItemToObject(o, "j", num(L->coord_j[idx[q]]));
        cJSON_AddItemToObject(o, "value", fnum(v[idx[q]]));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* "plucker_top": per token the top_k coordinates by mean |phat|; "plucker_top_layer": by their mean over the
 * tokens. */
static void plucker_top(cJSON *o, const gf_inspect_layer *L, int64_t T, int k) {
    const int64_t C = L->n_coords;
    int64_t *idx = malloc((size_t)k * sizeof *idx);
    float *mean = calloc((size_t)(C ? C : 1), sizeof *mean);
    cJSON *per = cJSON_AddArrayToObject(o, "plucker_top");
    for (int64_t t = 0; idx && per && t < T; t++)
        cJSON_AddItemToArray(per, coord_list(L, idx, top_k(L->coord + t * C, C, k, idx), L->coord + t * C));
    for (int64_t c = 0; mean && c < C; c++) {
        double s = 0.0;
        for (int64_t t = 0; t < T; t++) s += L->coord[t * C + c];
        mean[c] = (float)(s / (double)T);
    }
    if (idx && mean) cJSON_AddItemToObject(o, "plucker_top_layer", coord_list(L, idx, top_k(mean, C, k, idx), mean));
    free(idx);
    free(mean);
}

/* A Grassmann layer's members (after "layer", "mixer", "kind", "d_model"). */
static void grassmann_json(cJSON *o, const gf_inspect_layer *L, const gf_inspection *x, int k) {
    const int64_t T = x->T, P = L->positions, K = L->n_offsets;
    cJSON_AddItemToObject(o, "rank", num((double)L->rank));
    cJSON_AddItemToObject(o, "heads", num((double)L->heads));
    cJSON_AddItemToObject(o, "offsets", ints(L->offsets, K));
    cJSON_AddItemToObject(o, "n_valid", ints(L->n_valid, P));
    cJSON_AddItemToObject(o, "gate_mean", L->gate_mean ? row(L->gate_mean, P, 0) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "gate", L->gate ? matrix(L->gate, P, L->d) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "contribution", matrix(L->contrib, P, K));
    cJSON_AddItemToObject(o, "share", matrix(L->share, P, K));
    cJSON *dl = cJSON_AddArrayToObject(o, "drop_loss"), *dd = cJSON_AddArrayToObject(o, "drop_delta");
    for (int64_t q = 0; dl && dd && q < K; q++) {
        cJSON_AddItemToArray(dl, num(L->drop_loss[q]));
        cJSON_AddItemToArray(dd, num(L->drop_loss[q] - x->loss));
    }
    cJSON *td = cJSON_AddArrayToObject(o, "drop_token_delta"); /* per token: each offset's change of its loss */
    for (int64_t t = 0; td && t < T; t++) cJSON_AddItemToArray(td, row(L->drop_token_loss + t * K, K, x->token_loss[t]));
    for (int a = 0; a < 2; a++) {
        cJSON_AddItemToObject(o, a ? "gate1_loss" : "gate0_loss", num(L->gate_loss[a])); /* NAN: null */
        cJSON_AddItemToObject(o, a ? "gate1_delta" : "gate0_delta", num(L->gate_loss[a] - x->loss));
    }
    if (L->n_coords) plucker_top(o, L, P, k);
    else cJSON_AddItemToObject(o, "plucker_top", cJSON_CreateNull());
}

static cJSON *layer_json(const gf_inspect_layer *L, const gf_inspection *x, int k) {
    static const char *const kinds[] = {"other", "grassmann", "attention"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "layer", num(L->layer));
    cJSON_AddStringToObject(o, "mixer", L->mixer);
    cJSON_AddStringToObject(o, "kind", kinds[L->kind]);
    cJSON_AddItemToObject(o, "d_model", num((double)L->d));
    const int64_t P = L->positions;
    if (x->S > 0) { /* an encoder-decoder's: which stack, its positions, a decoder layer's attention over the source */
        cJSON_AddStringToObject(o, "stack", L->encoder ? "encoder" : "decoder");
        cJSON_AddItemToObject(o, "positions", num((double)P));
        cJSON_AddItemToObject(o, "cross_heads", num((double)L->cross_heads));
        cJSON *c = L->cross_heads ? cJSON_AddArrayToObject(o, "cross") : NULL; /* heads x targets x sources */
        for (int64_t h = 0; c && h < L->cross_heads; h++)
            cJSON_AddItemToArray(c, matrix(L->cross + h * x->T * x->S, x->T, x->S));
    }
    if (L->kind == GF_INSPECT_GRASSMANN) grassmann_json(o, L, x, k);
    if (L->kind != GF_INSPECT_ATTENTION) return o;
    cJSON_AddItemToObject(o, "n_head", num((double)L->n_head));
    cJSON *heads = cJSON_AddArrayToObject(o, "attention"); /* heads x queries x keys */
    for (int64_t h = 0; heads && h < L->n_head; h++) cJSON_AddItemToArray(heads, matrix(L->attn + h * P * P, P, P));
    return o;
}

char *gf_inspection_to_json(const gf_inspection *x, const char *const *labels, int top_k) {
    const int k = top_k < 1 ? 1 : top_k > 64 ? 64 : top_k;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "grassflow_inspect", num(INSPECT_JSON_VERSION));
    cJSON_AddItemToObject(o, "tokens", num((double)x->T));
    cJSON *ids = cJSON_AddArrayToObject(o, "ids"), *pieces = labels ? cJSON_AddArrayToObject(o, "pieces") : NULL;
    for (int64_t t = 0; ids && t < x->T; t++) {
        cJSON_AddItemToArray(ids, num(x->ids[t]));
        if (pieces) cJSON_AddItemToArray(pieces, cJSON_CreateString(labels[t] ? labels[t] : ""));
    }
    if (x->S > 0) { /* an encoder-decoder's source: its ids, and its pieces after the target's in labels */
        cJSON *sid = cJSON_AddArrayToObject(o, "source"), *sp = labels ? cJSON_AddArrayToObject(o, "source_pieces") : NULL;
        for (int64_t s = 0; sid && s < x->S; s++) {
            cJSON_AddItemToArray(sid, num(x->source[s]));
            if (sp) cJSON_AddItemToArray(sp, cJSON_CreateString(labels[x->T + s] ? labels[x->T + s] : ""));
        }
    }
    cJSON_AddItemToObject(o, "predicted", num((double)(x->T - 1)));
    cJSON_AddItemToObject(o, "loss", num(x->loss));
    cJSON_AddItemToObject(o, "ppl", num(exp(x->loss)));
    cJSON_AddItemToObject(o, "token_loss", row(x->token_loss, x->T, 0));
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int l = 0; layers && l < x->n_layers; l++) cJSON_AddItemToArray(layers, layer_json(&x->layers[l], x, k));
    char *s = gf_json_utf8(cJSON_PrintUnformatted(o)); /* a piece that is not UTF-8 (a byte's): U+FFFD */
    cJSON_Delete(o);
    if (!s) gf_fail("out of memory writing the inspection as JSON");
    return s;
}
