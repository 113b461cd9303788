#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "grassflow reads and writes safetensors data as raw memory: it needs a little-endian machine"
#endif

#define MAX_HEADER GF_ST_MAX_HEADER
#define MAX_FILE ((size_t)1 << 42)

static const char *const DTYPES[] = {"F32", "I32", "F64", "I64", "I8", "BF16"};
#define N_DTYPES 6

size_t gf_dtype_size(gf_dtype dt) {
    return (dt == GF_DT_F64 || dt == GF_DT_I64) ? 8 : dt == GF_DT_I8 ? 1 : dt == GF_DT_BF16 ? 2 : 4;
}

int gf_st_check_finite(const char *path, const char *name, const float *x, int64_t n, const char *why) {
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(x[k])) /* a model with NaN weights only ever gives NaN: refuse it where it is read */
            return gf_fail("%s: tensor \"%s\" holds %s at index %lld; %s", gf_show_name(path), name,
                           isnan(x[k]) ? "NaN" : "an infinite value", (long long)k, why);
    return 0;
}

int gf_st_write(const char *path, const gf_st_out *ts, int n, const char *const *meta_keys,
                const char *const *meta_vals, int n_meta) {
    cJSON *h = cJSON_CreateObject();
    if (n_meta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
        for (int i = 0; i < n_meta; i++) cJSON_AddStringToObject(meta, meta_keys[i], meta_vals[i]);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_AddObjectToObject(h, ts[i].name);
        cJSON_AddStringToObject(t, "dtype", DTYPES[ts[i].dtype]);
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        uint64_t numel = 1;
        for (int k = 0; k < ts[i].ndim; k++) {
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)ts[i].shape[k]));
            numel *= (uint64_t)ts[i].shape[k];
        }
        uint64_t bytes = numel * gf_dtype_size(ts[i].dtype);
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    char *json = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (!json) return gf_fail("out of memory writing the header of %s", gf_show_name(path));
    size_t jl = strlen(json), padded = (jl + 7) / 8 * 8;
    if (padded > MAX_HEADER) {
        free(json);
        return gf_fail("%s: the header would be %zu bytes, more than the %u a reader accepts; nothing was written "
                       "(the metadata, such as the tokenizer, is too large)", gf_show_name(path), padded, MAX_HEADER);
    }
    unsigned char *hdr = malloc(8 + padded);
    if (!hdr) {
        free(json);
        return gf_fail("out of memory writing %s", gf_show_name(path));
    }
    uint64_t hl = padded;
    memcpy(hdr, &hl, 8);
    memcpy(hdr + 8, json, jl);
    memset(hdr + 8 + jl, ' ', padded - jl);
    free(json);

    gf_atomic_file *f = gf_atomic_open(path);
    int rc = f ? gf_atomic_write(f, hdr, 8 + padded) : -1;
    free(hdr);
    for (int i = 0; i < n && rc == 0; i++) {
        uint64_t numel = 1;
        for (int k = 0; k < ts[i].ndim; k++) numel *= (uint64_t)ts[i].shape[k];
        rc = gf_atomic_write(f, ts[i].data, numel * gf_dtype_size(ts[i].dtype));
    }
    if (!f) return -1;
    if (rc) {
        gf_atomic_abort(f);
        return -1;
    }
    return gf_atomic_commit(f);
}

int gf_st_metadata_fits(const char *const *meta_keys, const char *const *meta_vals, int n_meta) {
    cJSON *meta = cJSON_CreateObject();
    for (int i = 0; i < n_meta; i++) cJSON_AddStringToObject(meta, meta_keys[i], meta_vals[i]);
    char *json = cJSON_PrintUnformatted(meta);
    cJSON_Delete(meta);
    if (!json) return gf_fail("out of memory measuring checkpoint metadata");
    size_t jl = strlen(json);
    free(json);
    const size_t room = (size_t)1 << 20; /* the tensor entries: about 100 bytes each */
    if (jl + room <= MAX_HEADER) return 0;
    size_t big = 0;
    for (int i = 1; i < n_meta; i++)
        if (strlen(meta_vals[i]) > strlen(meta_vals[big])) big = (size_t)i;
    return gf_fail("the checkpoint metadata would take %zu bytes (\"%s\" is %zu of them), more than the %u a "
                   "safetensors header may hold; the run could not save a checkpoint that loads", jl,
                   meta_keys[big], strlen(meta_vals[big]), MAX_HEADER - (unsigned)room);
}

void gf_st_free(gf_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free(f->buf);
    free(f->path);
    free(f->metadata_json);
    free(f);
}

static int cmp_begin(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int read_u64(const cJSON *it, uint64_t *out) {
    if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 9007199254740992.0 ||
        it->valuedouble != (double)(uint64_t)it->valuedouble)
        return -1;
    *out = (uint64_t)it->valuedouble;
    return 0;
}

gf_st_file *gf_st_read(const char *path) {
    size_t size;
    unsigned char *buf = gf_read_file(path, MAX_FILE, &size);
    return buf ? gf_st_parse(path, buf, size) : NULL;
}

/* The header of buf (size bytes): its JSON object, and where the data section starts. */
static cJSON *parse_header(const char *path, const unsigned char *buf, size_t size, uint64_t *hl_out) {
    if (size < 8) {
        gf_fail("%s: %zu bytes is too short for a safetensors file (it starts with an 8-byte header length)", gf_show_name(path),
                size);
        return NULL;
    }
    uint64_t hl;
    memcpy(&hl, buf, 8);
    if (hl > size - 8 || hl > MAX_HEADER) {
        gf_fail("%s: header length %llu is larger than the file (%zu bytes) allows; the file is truncated or "
                "not safetensors", gf_show_name(path), (unsigned long long)hl, size);
        return NULL;
    }
    char *hjson = malloc(hl + 1);
    if (!hjson) {
        gf_fail("out of memory reading the header of %s", gf_show_name(path));
        return NULL;
    }
    memcpy(hjson, buf + 8, hl);
    hjson[hl] = '\0';
    if (strlen(hjson) != hl) {
        free(hjson);
        gf_fail("%s: the header contains a NUL byte; not a safetensors file", gf_show_name(path));
        return NULL;
    }
    cJSON *h = cJSON_ParseWithOpts(hjson, NULL, 1);
    free(hjson);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        gf_fail("%s: the header is not a JSON object; not a safetensors file (or corrupt)", gf_show_name(path));
        return NULL;
    }
    *hl_out = hl;
    return h;
}

static int parse_metadata(gf_st_file *f, const cJSON *it) {
    if (!cJSON_IsObject(it)) return gf_fail("%s: __metadata__ must be an object of strings", gf_show_name(f->path));
    for (cJSON *m = it->child; m; m = m->next)
        if (!cJSON_IsString(m)) return gf_fail("%s: __metadata__[\"%s\"] must be a string", gf_show_name(f->path), m->string);
    free(f->metadata_json);
    f->metadata_json = cJSON_PrintUnformatted(it);
    return 0;
}

/* t's dtype and shape (numel: their product) from the header entry `it`. */
static int parse_dtype_shape(const char *path, const cJSON *it, gf_st_tensor *t, uint64_t *numel) {
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    if (!cJSON_IsObject(it) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
        cJSON_GetArraySize(of) != 2)
        return gf_fail("%s: tensor \"%s\" needs \"dtype\" (string), \"shape\" (list) and \"data_offsets\" ([begin, "
                       "end])", gf_show_name(path), it->string);
    int k = 0;
    while (k < N_DTYPES && strcmp(dt->valuestring, DTYPES[k])) k++;
    if (k == N_DTYPES)
        return gf_fail("%s: tensor \"%s\" has dtype %s; grassflow reads F32, I32, F64, I64, I8 and BF16 (save the "
                       "tensor as float32)", gf_show_name(path), it->string, dt->valuestring);
    t->dtype = (gf_dtype)k;
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > 8)
        return gf_fail("%s: tensor \"%s\" has %d dimensions; at most 8 are supported", gf_show_name(path), it->string, t->ndim);
    *numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        uint64_t s;
        if (read_u64(cJSON_GetArrayItem(sh, d), &s) || __builtin_mul_overflow(*numel, s, numel))
            return gf_fail("%s: tensor \"%s\": shape entry %d is not a size (or the shape's product overflows)",
                           gf_show_name(path), it->string, d);
        t->shape[d] = (int64_t)s;
    }
    return 0;
}

/* The header entry `it` as the next tensor of f, its byte span [b, e) of the data section into span. */
static int parse_tensor(gf_st_file *f, const cJSON *it, const unsigned char *data, uint64_t data_size, uint64_t *span) {
    const char *path = f->path;
    for (int i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, it->string))
            return gf_fail("%s: tensor \"%s\" appears twice in the header", gf_show_name(path), it->string);
    gf_st_tensor *t = &f->tensors[f->n_tensors];
    if (!(t->name = strdup(it->string))) return gf_fail("out of memory reading %s", gf_show_name(path));
    f->n_tensors++;
    uint64_t numel = 0, b, e, bytes;
    if (parse_dtype_shape(path, it, t, &numel)) return -1;
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    if (read_u64(cJSON_GetArrayItem(of, 0), &b) || read_u64(cJSON_GetArrayItem(of, 1), &e) || b > e || e > data_size)
        return gf_fail("%s: tensor \"%s\": data_offsets are not a range inside the %llu-byte data section", gf_show_name(path),
                       it->string, (unsigned long long)data_size);
    if (__builtin_mul_overflow(numel, (uint64_t)gf_dtype_size(t->dtype), &bytes) || bytes != e - b)
        return gf_fail("%s: tensor \"%s\": shape needs %llu elements but data_offsets span %llu bytes", gf_show_name(path),
                       it->string, (unsigned long long)numel, (unsigned long long)(e - b));
    t->numel = (int64_t)numel;
    t->data = data + b;
    span[0] = b;
    span[1] = e;
    return 0;
}

/* The tensors' spans (n pairs) must tile the data section without gaps or overlaps. */
static int check_tiling(const char *path, uint64_t *spans, int n, uint64_t data_size) {
    qsort(spans, (size_t)n, 2 * sizeof *spans, cmp_begin);
    uint64_t pos = 0;
    for (int i = 0; i < n; i++) {
        if (spans[2 * i] != pos)
            return gf_fail("%s: tensor data %s at byte %llu of the data section (tensors must tile it without gaps "
                           "or overlaps)", gf_show_name(path), spans[2 * i] < pos ? "overlaps" : "leaves a gap",
                           (unsigned long long)spans[2 * i]);
        pos = spans[2 * i + 1];
    }
    if (pos != data_size)
        return gf_fail("%s: %llu bytes at the end of the data section belong to no tensor (file corrupt?)", gf_show_name(path),
                       (unsigned long long)(data_size - pos));
    return 0;
}

gf_st_file *gf_st_parse(const char *path, unsigned char *buf, size_t size) {
    gf_st_file *f = calloc(1, sizeof *f);
    uint64_t *spans = NULL, hl = 0;
    if (!f || !(f->path = strdup(path))) {
        free(buf);
        free(f);
        gf_fail("out of memory reading %s", gf_show_name(path));
        return NULL;
    }
    f->buf = buf;
    f->size = size;
    cJSON *h = parse_header(path, buf, size, &hl);
    int rc = h ? 0 : -1, n = 0;
    const unsigned char *data = f->buf + 8 + hl;
    const uint64_t data_size = rc ? 0 : f->size - 8 - hl;
    for (cJSON *it = h ? h->child : NULL; it; it = it->next) n += strcmp(it->string, "__metadata__") != 0;
    if (!rc) {
        f->tensors = calloc((size_t)(n ? n : 1), sizeof *f->tensors);
        spans = calloc((size_t)(n ? n : 1), 2 * sizeof *spans);
        if (!f->tensors || !spans) rc = gf_fail("out of memory reading %s", gf_show_name(path));
    }
    for (cJSON *it = h ? h->child : NULL; !rc && it; it = it->next)
        rc = !strcmp(it->string, "__metadata__") ? parse_metadata(f, it)
                                                  : parse_tensor(f, it, data, data_size, spans + 2 * f->n_tensors);
    if (!rc) rc = check_tiling(path, spans, f->n_tensors, data_size);
    free(spans);
    cJSON_Delete(h);
    if (rc) {
        gf_st_free(f);
        return NULL;
    }
    return f;
}

const gf_st_tensor *gf_st_find(const gf_st_file *f, const char *name) {
    for (int i = 0; i < f->n_tensors; i++)
        if (!strcmp(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

char *gf_st_metadata(const gf_st_file *f, const char *key) {
    if (!f->metadata_json) return NULL;
    cJSON *m = cJSON_Parse(f->metadata_json);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    char *out = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
    cJSON_Delete(m);
    return out;
}
