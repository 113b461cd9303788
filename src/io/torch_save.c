/* A PyTorch checkpoint written without Python (io/torch_ckpt.h, gf_torch_save): what torch.save writes for a dict,
 * so that torch.load (1.6 and later, weights_only or not) and the code that trained a reproduction read it. The
 * zip: stored entries, each one's data 64-byte aligned as torch aligns it, FOLDER "archive" with data.pkl,
 * data/KEY per storage, version "3" and byteorder "little". The pickle (protocol 2): {"model_state_dict":
 * OrderedDict(name: tensor), then the numbers given}; a tensor is torch._utils._rebuild_tensor_v2 of its storage
 * (a persistent id ("storage", torch.FloatStorage or LongStorage, key, "cpu", numel)), offset 0, its size, its
 * contiguous strides, False and an empty OrderedDict. Tensors whose data is one array share one storage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/error.h"
#include "io/file.h"
#include "io/torch_ckpt.h"

typedef struct {
    uint8_t *b;
    size_t n, cap;
    int oom;
} bytes;

static void put(bytes *o, const void *p, size_t n) {
    if (o->oom) return;
    if (o->n + n > o->cap) {
        size_t c = o->cap ? o->cap : 4096;
        while (c < o->n + n) c *= 2;
        uint8_t *r = realloc(o->b, c);
        if (!r) {
            o->oom = 1;
            return;
        }
        o->b = r, o->cap = c;
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void le(bytes *o, uint64_t v, int n) {
    uint8_t q[8];
    for (int i = 0; i < n; i++) q[i] = (uint8_t)(v >> (8 * i));
    put(o, q, (size_t)n);
}

static void op(bytes *o, uint8_t c) { put(o, &c, 1); }

static void p_str(bytes *o, const char *s) {
    op(o, 'X');
    le(o, strlen(s), 4);
    put(o, s, strlen(s));
}

static void p_int(bytes *o, int64_t v) {
    if (v >= 0 && v < 256) op(o, 'K'), le(o, (uint64_t)v, 1);
    else if (v >= 0 && v < 65536) op(o, 'M'), le(o, (uint64_t)v, 2);
    else if (v >= INT32_MIN && v <= INT32_MAX) op(o, 'J'), le(o, (uint64_t)(uint32_t)(int32_t)v, 4);
    else op(o, 0x8a), op(o, 8), le(o, (uint64_t)v, 8);
}

static void p_float(bytes *o, double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    op(o, 'G');
    for (int i = 7; i >= 0; i--) op(o, (uint8_t)(u >> (8 * i)));
}

static void p_global(bytes *o, const char *module, const char *name) {
    op(o, 'c');
    put(o, module, strlen(module));
    op(o, '\n');
    put(o, name, strlen(name));
    op(o, '\n');
}

static void p_ints(bytes *o, const int64_t *v, int n) {
    if (!n) {
        op(o, ')');
        return;
    }
    op(o, '(');
    for (int i = 0; i < n; i++) p_int(o, v[i]);
    op(o, 't');
}

/* _rebuild_tensor_v2(storage KEY, 0, size, contiguous stride, False, OrderedDict()) */
static void p_tensor(bytes *o, const gf_torch_tensor *t, int key) {
    char k[24];
    snprintf(k, sizeof k, "%d", key);
    int64_t stride[GF_TORCH_MAX_DIMS];
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) stride[i] = s, s *= t->shape[i];
    p_global(o, "torch._utils", "_rebuild_tensor_v2");
    op(o, '(');
    op(o, '(');
    p_str(o, "storage");
    p_global(o, "torch", t->dtype == GF_TT_I64 ? "LongStorage" : "FloatStorage");
    p_str(o, k);
    p_str(o, "cpu");
    p_int(o, t->numel);
    op(o, 't');
    op(o, 'Q');
    p_int(o, 0);
    p_ints(o, t->shape, t->ndim);
    p_ints(o, stride, t->ndim);
    op(o, 0x89);
    p_global(o, "collections", "OrderedDict");
    op(o, ')');
    op(o, 'R');
    op(o, 't');
    op(o, 'R');
}

/* Each tensor's storage key: the first tensor with the same data array gives its key. */
static int *storage_keys(const gf_torch_tensor *t, int64_t n, int *n_keys) {
    int *key = malloc((size_t)(n ? n : 1) * sizeof *key);
    if (!key) return NULL;
    *n_keys = 0;
    for (int64_t i = 0; i < n; i++) {
        key[i] = -1;
        for (int64_t j = 0; j < i && key[i] < 0; j++)
            if (t[j].data == t[i].data && t[j].dtype == t[i].dtype && t[j].numel == t[i].numel) key[i] = key[j];
        if (key[i] < 0) key[i] = (*n_keys)++;
    }
    return key;
}

static void pickle(bytes *o, const gf_torch_tensor *t, int64_t n, const int *key, const gf_torch_numbers *x) {
    op(o, 0x80), op(o, 2);
    op(o, '}');
    op(o, '(');
    p_str(o, "model_state_dict");
    p_global(o, "collections", "OrderedDict");
    op(o, ')'), op(o, 'R');
    op(o, '(');
    for (int64_t i = 0; i < n; i++) p_str(o, t[i].name), p_tensor(o, &t[i], key[i]);
    op(o, 'u');
    if (isfinite(x->epoch)) p_str(o, "epoch"), p_int(o, (int64_t)x->epoch);
    if (isfinite(x->val_loss)) p_str(o, "val_loss"), p_float(o, x->val_loss);
    if (isfinite(x->val_ppl)) p_str(o, "val_ppl"), p_float(o, x->val_ppl);
    op(o, 'u');
    op(o, '.');
}

typedef struct {
    char name[64];
    uint32_t crc, size, offset;
} entry;

/* One stored entry, its data 64-byte aligned (an extra field of padding, as torch writes). */
static void zip_entry(bytes *o, entry *e, const char *name, const void *data, size_t n) {
    snprintf(e->name, sizeof e->name, "%s", name);
    e->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)n), e->size = (uint32_t)n, e->offset = (uint32_t)o->n;
    const size_t nl = strlen(name), at = o->n + 30 + nl;
    size_t pad = (64 - at % 64) % 64;
    if (pad && pad < 4) pad += 64;
    le(o, 0x04034b50, 4), le(o, 20, 2), le(o, 0, 2), le(o, 0, 2), le(o, 0, 2), le(o, 0x21, 2);
    le(o, e->crc, 4), le(o, n, 4), le(o, n, 4), le(o, nl, 2), le(o, pad, 2);
    put(o, name, nl);
    if (pad) {
        le(o, 0x4246, 2), le(o, pad - 4, 2); /* "FB": padding */
        for (size_t i = 4; i < pad; i++) op(o, 'Z');
    }
    put(o, data, n);
}

static void zip_directory(bytes *o, const entry *e, int n) {
    const size_t cd = o->n;
    for (int i = 0; i < n; i++) {
        const size_t nl = strlen(e[i].name);
        le(o, 0x02014b50, 4), le(o, 20, 2), le(o, 20, 2), le(o, 0, 2), le(o, 0, 2), le(o, 0, 2), le(o, 0x21, 2);
        le(o, e[i].crc, 4), le(o, e[i].size, 4), le(o, e[i].size, 4), le(o, nl, 2), le(o, 0, 2), le(o, 0, 2);
        le(o, 0, 2), le(o, 0, 2), le(o, 0, 4), le(o, e[i].offset, 4);
        put(o, e[i].name, nl);
    }
    le(o, 0x06054b50, 4), le(o, 0, 2), le(o, 0, 2), le(o, (uint64_t)n, 2), le(o, (uint64_t)n, 2);
    le(o, o->n - cd, 4), le(o, cd, 4), le(o, 0, 2);
}

static int archive(bytes *o, const gf_torch_tensor *t, int64_t n, const int *key, int n_keys, const bytes *pkl) {
    entry *e = calloc((size_t)n_keys + 3, sizeof *e);
    if (!e) return gf_fail("out of memory");
    int k = 0;
    zip_entry(o, &e[k++], "archive/data.pkl", pkl->b, pkl->n);
    zip_entry(o, &e[k++], "archive/byteorder", "little", 6);
    for (int s = 0; s < n_keys; s++)
        for (int64_t i = 0; i < n; i++)
            if (key[i] == s) {
                char name[40];
                snprintf(name, sizeof name, "archive/data/%d", s);
                zip_entry(o, &e[k++], name, t[i].data, (size_t)t[i].numel * (size_t)gf_torch_dtype_size(t[i].dtype));
                break;
            }
    zip_entry(o, &e[k++], "archive/version", "3\n", 2);
    zip_directory(o, e, k);
    free(e);
    return 0;
}

int gf_torch_save(const char *path, const gf_torch_tensor *t, int64_t n, const gf_torch_numbers *x) {
    for (int64_t i = 0; i < n; i++)
        if (t[i].dtype != GF_TT_F32 && t[i].dtype != GF_TT_I64)
            return gf_fail("%s: tensor %s is %s; this writer writes float32 and int64", path, t[i].name,
                           gf_torch_dtype_name(t[i].dtype));
    int n_keys = 0;
    int *key = storage_keys(t, n, &n_keys);
    bytes pkl = {0}, zip = {0};
    if (key) pickle(&pkl, t, n, key, x);
    int rc = !key || pkl.oom ? gf_fail("out of memory writing %s", path) : archive(&zip, t, n, key, n_keys, &pkl);
    if (!rc && (zip.oom || zip.n > 0xFFFFFFFFu))
        rc = gf_fail(zip.oom ? "out of memory writing %s" : "%s would pass 4 GiB, past what this writer's zip holds", path);
    gf_atomic_file *f = rc ? NULL : gf_atomic_open(path);
    if (!rc && !f) rc = -1;
    else if (!rc && gf_atomic_write(f, zip.b, zip.n)) gf_atomic_abort(f), rc = -1;
    else if (!rc && gf_atomic_commit(f)) rc = -1; /* commit frees f either way */
    free(key), free(pkl.b), free(zip.b);
    return rc;
}
