#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "grassflow reads and writes safetensors data as raw memory: it needs a little-endian machine"
#endif

#define MAX_HEADER (100u << 20)
#define MAX_FILE ((size_t)1 << 42)

static const char *const DTYPES[] = {"F32", "I32", "F64", "I64"};

size_t gf_dtype_size(gf_dtype dt) { return (dt == GF_DT_F64 || dt == GF_DT_I64) ? 8 : 4; }

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
    if (!json) return gf_fail("out of memory writing the header of %s", path);
    size_t jl = strlen(json), padded = (jl + 7) / 8 * 8;
    unsigned char *hdr = malloc(8 + padded);
    if (!hdr) {
        free(json);
        return gf_fail("out of memory writing %s", path);
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

gf_st_file *gf_st_parse(const char *path, unsigned char *buf, size_t size) {
    gf_st_file *f = calloc(1, sizeof *f);
    cJSON *h = NULL;
    uint64_t *spans = NULL;
    if (!f || !(f->path = strdup(path))) {
        free(buf);
        if (f) free(f);
        gf_fail("out of memory reading %s", path);
        return NULL;
    }
    f->buf = buf;
    f->size = size;
    if (f->size < 8) {
        gf_fail("%s: %zu bytes is too short for a safetensors file (it starts with an 8-byte header length)",
                path, f->size);
        goto fail;
    }
    uint64_t hl;
    memcpy(&hl, f->buf, 8);
    if (hl > f->size - 8 || hl > MAX_HEADER) {
        gf_fail("%s: header length %llu is larger than the file (%zu bytes) allows; the file is truncated or "
                "not safetensors", path, (unsigned long long)hl, f->size);
        goto fail;
    }
    char *hjson = malloc(hl + 1);
    if (!hjson) {
        gf_fail("out of memory reading the header of %s", path);
        goto fail;
    }
    memcpy(hjson, f->buf + 8, hl);
    hjson[hl] = '\0';
    if (strlen(hjson) != hl) {
        free(hjson);
        gf_fail("%s: the header contains a NUL byte; not a safetensors file", path);
        goto fail;
    }
    h = cJSON_ParseWithOpts(hjson, NULL, 1);
    free(hjson);
    if (!h || !cJSON_IsObject(h)) {
        gf_fail("%s: the header is not a JSON object; not a safetensors file (or corrupt)", path);
        goto fail;
    }
    const unsigned char *data = f->buf + 8 + hl;
    const uint64_t data_size = f->size - 8 - hl;
    int n = 0;
    for (cJSON *it = h->child; it; it = it->next) n += strcmp(it->string, "__metadata__") != 0;
    f->tensors = calloc((size_t)(n ? n : 1), sizeof *f->tensors);
    spans = calloc((size_t)(n ? n : 1), 2 * sizeof *spans);
    if (!f->tensors || !spans) {
        gf_fail("out of memory reading %s", path);
        goto fail;
    }
    for (cJSON *it = h->child; it; it = it->next) {
        if (!strcmp(it->string, "__metadata__")) {
            if (!cJSON_IsObject(it)) {
                gf_fail("%s: __metadata__ must be an object of strings", path);
                goto fail;
            }
            for (cJSON *m = it->child; m; m = m->next)
                if (!cJSON_IsString(m)) {
                    gf_fail("%s: __metadata__[\"%s\"] must be a string", path, m->string);
                    goto fail;
                }
            free(f->metadata_json);
            f->metadata_json = cJSON_PrintUnformatted(it);
            continue;
        }
        for (int i = 0; i < f->n_tensors; i++)
            if (!strcmp(f->tensors[i].name, it->string)) {
                gf_fail("%s: tensor \"%s\" appears twice in the header", path, it->string);
                goto fail;
            }
        gf_st_tensor *t = &f->tensors[f->n_tensors];
        if (!(t->name = strdup(it->string))) {
            gf_fail("out of memory reading %s", path);
            goto fail;
        }
        f->n_tensors++;
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        if (!cJSON_IsObject(it) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
            cJSON_GetArraySize(of) != 2) {
            gf_fail("%s: tensor \"%s\" needs \"dtype\" (string), \"shape\" (list) and \"data_offsets\" ([begin, "
                    "end])", path, it->string);
            goto fail;
        }
        int k = 0;
        while (k < 4 && strcmp(dt->valuestring, DTYPES[k])) k++;
        if (k == 4) {
            gf_fail("%s: tensor \"%s\" has dtype %s; grassflow reads F32, I32, F64 and I64 (save the tensor as "
                    "float32)", path, it->string, dt->valuestring);
            goto fail;
        }
        t->dtype = (gf_dtype)k;
        t->ndim = cJSON_GetArraySize(sh);
        if (t->ndim > 8) {
            gf_fail("%s: tensor \"%s\" has %d dimensions; at most 8 are supported", path, it->string, t->ndim);
            goto fail;
        }
        uint64_t numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            uint64_t s;
            if (read_u64(cJSON_GetArrayItem(sh, d), &s) || __builtin_mul_overflow(numel, s, &numel)) {
                gf_fail("%s: tensor \"%s\": shape entry %d is not a size (or the shape's product overflows)",
                        path, it->string, d);
                goto fail;
            }
            t->shape[d] = (int64_t)s;
        }
        uint64_t b, e, bytes;
        if (read_u64(cJSON_GetArrayItem(of, 0), &b) || read_u64(cJSON_GetArrayItem(of, 1), &e) || b > e ||
            e > data_size) {
            gf_fail("%s: tensor \"%s\": data_offsets are not a range inside the %llu-byte data section", path,
                    it->string, (unsigned long long)data_size);
            goto fail;
        }
        if (__builtin_mul_overflow(numel, (uint64_t)gf_dtype_size(t->dtype), &bytes) || bytes != e - b) {
            gf_fail("%s: tensor \"%s\": shape needs %llu elements but data_offsets span %llu bytes", path,
                    it->string, (unsigned long long)numel, (unsigned long long)(e - b));
            goto fail;
        }
        t->numel = (int64_t)numel;
        t->data = data + b;
        spans[2 * (f->n_tensors - 1)] = b;
        spans[2 * (f->n_tensors - 1) + 1] = e;
    }
    qsort(spans, (size_t)f->n_tensors, 2 * sizeof *spans, cmp_begin);
    uint64_t pos = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        if (spans[2 * i] != pos) {
            gf_fail("%s: tensor data %s at byte %llu of the data section (tensors must tile it without gaps or "
                    "overlaps)", path, spans[2 * i] < pos ? "overlaps" : "leaves a gap",
                    (unsigned long long)spans[2 * i]);
            goto fail;
        }
        pos = spans[2 * i + 1];
    }
    if (pos != data_size) {
        gf_fail("%s: %llu bytes at the end of the data section belong to no tensor (file corrupt?)", path,
                (unsigned long long)(data_size - pos));
        goto fail;
    }
    free(spans);
    cJSON_Delete(h);
    return f;
fail:
    free(spans);
    cJSON_Delete(h);
    gf_st_free(f);
    return NULL;
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
