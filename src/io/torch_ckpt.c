/* A PyTorch checkpoint read without Python (io/torch_ckpt.h). */
#include "io/torch_ckpt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compute/bf16.h"
#include "io/file.h"
#include "io/pickle.h"
#include "io/zip.h"

#define MAX_FILE ((size_t)16 << 30) /* the whole file is read: a checkpoint past 16 GiB is refused */
#define MAX_PICKLE ((uint64_t)8 << 20) /* data.pkl: a state dict's is kilobytes; each value costs memory */
#define MAX_INFLATE ((uint64_t)64 << 20) /* a deflated storage (torch.save stores them): a zip bomb costs no more */
/* The tensors copied out: at most twice the file (a tied head and its embedding share one storage) and 64 MiB; a
 * pickle that names views of one storage a million times is refused at that, not after terabytes. */
#define MAX_COPIED (2 * (uint64_t)r->len_in + MAX_INFLATE)
enum { MAX_TENSORS = 16384 }; /* a state dict's tensors (a 12-layer model has about 200); names are found by scan */

static const struct { const char *storage; gf_torch_dtype dtype; int size; const char *name; } TYPES[] = {
    {"torch.FloatStorage", GF_TT_F32, 4, "float32"},  {"torch.HalfStorage", GF_TT_F16, 2, "float16"},
    {"torch.BFloat16Storage", GF_TT_BF16, 2, "bfloat16"}, {"torch.DoubleStorage", GF_TT_F64, 8, "float64"},
    {"torch.LongStorage", GF_TT_I64, 8, "int64"},     {"torch.IntStorage", GF_TT_I32, 4, "int32"},
    {"torch.ShortStorage", GF_TT_I16, 2, "int16"},    {"torch.CharStorage", GF_TT_I8, 1, "int8"},
    {"torch.ByteStorage", GF_TT_U8, 1, "uint8"},      {"torch.BoolStorage", GF_TT_BOOL, 1, "bool"},
};
enum { N_TYPES = (int)(sizeof TYPES / sizeof TYPES[0]) };

int gf_torch_dtype_size(gf_torch_dtype d) {
    for (int i = 0; i < N_TYPES; i++)
        if (TYPES[i].dtype == d) return TYPES[i].size;
    return 0;
}

const char *gf_torch_dtype_name(gf_torch_dtype d) {
    for (int i = 0; i < N_TYPES; i++)
        if (TYPES[i].dtype == d) return TYPES[i].name;
    return "?";
}

typedef struct {
    const char *what;
    gf_zip zip;
    char prefix[256]; /* the archive's folder: "best" for best/data.pkl */
    gf_torch_ckpt *c;
    uint8_t **owned;  /* inflated storages, each once: owned[i] is entry owned_of[i]'s */
    const gf_zip_entry **owned_of;
    int64_t n_owned;
    uint64_t copied;  /* bytes of tensors copied out so far (bounded: MAX_COPIED) */
    size_t len_in;    /* the file's bytes */
} reader;

/* The archive's folder: the one entry called FOLDER/data.pkl. */
static const gf_zip_entry *find_pickle(reader *r) {
    const gf_zip_entry *found = NULL;
    for (int64_t i = 0; i < r->zip.n; i++) {
        const char *n = r->zip.e[i].name, *slash = strchr(n, '/');
        if (!slash || strcmp(slash, "/data.pkl") || (size_t)(slash - n) >= sizeof r->prefix) continue;
        if (found) return gf_fail("%s: two data.pkl entries in one archive", r->what), NULL;
        found = &r->zip.e[i];
        memcpy(r->prefix, n, (size_t)(slash - n));
        r->prefix[slash - n] = 0;
    }
    if (!found) gf_fail("%s: a zip archive without FOLDER/data.pkl: not a torch.save checkpoint", r->what);
    return found;
}

static bool is_tensor(const gf_pk *v) {
    if (v && v->kind == GF_PK_CALL && !strcmp(v->items[0]->s, "torch._utils._rebuild_parameter"))
        v = v->items[1]->n ? v->items[1]->items[0] : NULL;
    return v && v->kind == GF_PK_CALL && !strcmp(v->items[0]->s, "torch._utils._rebuild_tensor_v2");
}

/* The state dict: the top-level dict if a value of it is a tensor, else a member of it that is one. */
static const gf_pk *state_dict(const reader *r, const gf_pk *root) {
    if (!root || root->kind != GF_PK_DICT) return gf_fail("%s: its pickle is not a dict", r->what), NULL;
    for (int64_t i = 1; i < root->n; i += 2)
        if (is_tensor(root->items[i])) return root;
    static const char *const KEYS[] = {"model_state_dict", "state_dict", "model", NULL};
    for (int k = 0; KEYS[k]; k++) {
        const gf_pk *v = gf_pk_get(root, KEYS[k]);
        if (v && v->kind == GF_PK_DICT) return v;
    }
    return gf_fail("%s: no state dict in it (neither tensors at its top level nor a model_state_dict, state_dict or "
                   "model member)", r->what), NULL;
}

static double number(const gf_pk *root, const char *key) {
    const gf_pk *v = gf_pk_get(root, key);
    return !v ? NAN : v->kind == GF_PK_FLOAT ? v->f : v->kind == GF_PK_INT ? (double)v->i : NAN;
}

/* The storage a tensor's persistent id names: its dtype (index into TYPES), element count and bytes. */
static const uint8_t *storage(reader *r, const gf_pk *pid, const char *name, int *type, int64_t *numel) {
    const gf_pk *t = pid && pid->kind == GF_PK_PERSID ? pid->items[0] : NULL;
    if (!t || t->kind != GF_PK_TUPLE || t->n != 5 || t->items[0]->kind != GF_PK_STR || strcmp(t->items[0]->s, "storage") ||
        t->items[1]->kind != GF_PK_GLOBAL || t->items[2]->kind != GF_PK_STR || t->items[4]->kind != GF_PK_INT)
        return gf_fail("%s: tensor %s's storage is not ('storage', type, key, location, numel)", r->what, name), NULL;
    *type = -1;
    for (int i = 0; i < N_TYPES; i++)
        if (!strcmp(t->items[1]->s, TYPES[i].storage)) *type = i;
    if (*type < 0) return gf_fail("%s: tensor %s has storage %s, which this reader does not take", r->what, name, t->items[1]->s), NULL;
    *numel = t->items[4]->i;
    char entry[600];
    if (t->items[2]->len > 256) return gf_fail("%s: tensor %s's storage key is %zu bytes long", r->what, name, t->items[2]->len), NULL;
    snprintf(entry, sizeof entry, "%s/data/%s", r->prefix, t->items[2]->s);
    const gf_zip_entry *e = gf_zip_find(&r->zip, entry);
    if (!e) return gf_fail("%s: tensor %s's storage %s is missing from the archive", r->what, name, entry), NULL;
    if (*numel < 0 || (uint64_t)*numel > e->size / (uint64_t)TYPES[*type].size)
        return gf_fail("%s: tensor %s's storage claims %lld elements of %s; %s holds %llu bytes", r->what, name,
                       (long long)*numel, TYPES[*type].name, entry, (unsigned long long)e->size), NULL;
    for (int64_t i = 0; i < r->n_owned; i++) /* a storage inflated before (views share one) */
        if (r->owned_of[i] == e) return r->owned[i];
    uint8_t *owned = NULL;
    const uint8_t *d = gf_zip_data(&r->zip, e, e->method ? MAX_INFLATE : e->size, &owned);
    if (owned) {
        uint8_t **o = realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *o);
        const gf_zip_entry **of = o ? realloc(r->owned_of, (size_t)(r->n_owned + 1) * sizeof *of) : NULL;
        if (o) r->owned = o;
        if (!of) return free(owned), gf_fail("out of memory"), NULL;
        r->owned_of = of, r->owned_of[r->n_owned] = e, r->owned[r->n_owned++] = owned;
    }
    return d;
}

/* Sizes and strides from args 2 and 3, checked: the view's last element within the storage's numel. */
static int geometry(reader *r, const gf_pk *args, const char *name, int64_t offset, int64_t numel_storage,
                    gf_torch_tensor *t, int64_t *stride) {
    const gf_pk *sz = args->items[2], *st = args->items[3];
    if (sz->kind != GF_PK_TUPLE || st->kind != GF_PK_TUPLE || sz->n != st->n || sz->n > GF_TORCH_MAX_DIMS)
        return gf_fail("%s: tensor %s's size and stride are not two tuples of one length (at most %d)", r->what, name,
                       GF_TORCH_MAX_DIMS);
    t->ndim = (int)sz->n, t->numel = 1;
    int64_t last = offset;
    for (int k = 0; k < t->ndim; k++) {
        if (sz->items[k]->kind != GF_PK_INT || st->items[k]->kind != GF_PK_INT || sz->items[k]->i < 0 || st->items[k]->i < 0)
            return gf_fail("%s: tensor %s has a size or stride that is not a count", r->what, name);
        t->shape[k] = sz->items[k]->i, stride[k] = st->items[k]->i;
        if (t->shape[k] && t->numel > numel_storage / t->shape[k])
            return gf_fail("%s: tensor %s has more elements than its storage (%lld): an expanded view, not read", r->what,
                           name, (long long)numel_storage);
        t->numel *= t->shape[k];
    }
    if (!t->numel) return 0;
    if (offset < 0 || offset >= numel_storage)
        return gf_fail("%s: tensor %s starts at %lld, outside its storage of %lld", r->what, name, (long long)offset,
                       (long long)numel_storage);
    for (int k = 0; k < t->ndim; k++) { /* last stays within [offset, numel_storage) */
        if (stride[k] && t->shape[k] - 1 > (numel_storage - 1 - last) / stride[k])
            return gf_fail("%s: tensor %s reaches past the end of its storage (%lld elements)", r->what, name,
                           (long long)numel_storage);
        last += (t->shape[k] - 1) * stride[k];
    }
    return 0;
}

/* Copy the view row-major into t->data, element by element (strides in elements). */
static void gather(uint8_t *dst, const uint8_t *src, int size, const gf_torch_tensor *t, const int64_t *stride, int64_t offset) {
    int64_t idx[GF_TORCH_MAX_DIMS] = {0};
    for (int64_t n = 0; n < t->numel; n++) {
        int64_t at = offset;
        for (int k = 0; k < t->ndim; k++) at += idx[k] * stride[k];
        memcpy(dst + n * size, src + at * size, (size_t)size);
        for (int k = t->ndim - 1; k >= 0 && ++idx[k] == t->shape[k]; k--) idx[k] = 0;
    }
}

static int add_tensor(reader *r, const char *name, const gf_pk *v) {
    if (v->kind == GF_PK_CALL && !strcmp(v->items[0]->s, "torch._utils._rebuild_parameter")) v = v->items[1]->items[0];
    const gf_pk *args = v->items[1];
    if (args->n < 4 || args->items[1]->kind != GF_PK_INT)
        return gf_fail("%s: tensor %s is rebuilt from arguments this reader does not know", r->what, name);
    int type;
    int64_t numel_storage, stride[GF_TORCH_MAX_DIMS];
    const uint8_t *src = storage(r, args->items[0], name, &type, &numel_storage);
    gf_torch_tensor *t = &r->c->t[r->c->n];
    if (!src || geometry(r, args, name, args->items[1]->i, numel_storage, t, stride)) return -1;
    t->dtype = TYPES[type].dtype;
    const uint64_t bytes = (uint64_t)t->numel * (uint64_t)TYPES[type].size;
    if (bytes > MAX_COPIED - r->copied)
        return gf_fail("%s: its tensors copy out to more than %llu bytes (views of its storages named again and again?)",
                       r->what, (unsigned long long)MAX_COPIED);
    r->copied += bytes;
    if (!(t->data = malloc(t->numel ? (size_t)t->numel * (size_t)TYPES[type].size : 1)) || !(t->name = strdup(name))) {
        free(t->data); /* not yet counted in c->n: gf_torch_free would not see it */
        t->data = NULL;
        return gf_fail("out of memory for tensor %s", name);
    }
    gather(t->data, src, TYPES[type].size, t, stride, args->items[1]->i);
    r->c->n++;
    return 0;
}

/* The name without torch.compile's and DataParallel's prefixes. */
static const char *bare(const char *name) {
    static const char *const PREFIXES[] = {"_orig_mod.", "module."};
    for (bool again = true; again;) {
        again = false;
        for (int k = 0; k < 2; k++)
            if (!strncmp(name, PREFIXES[k], strlen(PREFIXES[k]))) name += strlen(PREFIXES[k]), again = true;
    }
    return name;
}

static int read_state(reader *r, const gf_pk *sd) {
    if (sd->n / 2 > MAX_TENSORS)
        return gf_fail("%s: its state dict has %lld entries, more than the %d this reader takes", r->what,
                       (long long)(sd->n / 2), MAX_TENSORS);
    if (!(r->c->t = calloc((size_t)(sd->n / 2 + 1), sizeof *r->c->t))) return gf_fail("out of memory");
    for (int64_t i = 0; i + 1 < sd->n; i += 2) {
        const gf_pk *k = sd->items[i], *v = sd->items[i + 1];
        if (k->kind != GF_PK_STR) return gf_fail("%s: its state dict has a key that is not a string", r->what);
        if (!is_tensor(v)) continue; /* a state dict's other values (none in torch's own) */
        const char *name = bare(k->s);
        r->c->stripped += name != k->s;
        if (gf_torch_find(r->c, name)) return gf_fail("%s: tensor %s appears twice (with and without a prefix?)", r->what, name);
        if (add_tensor(r, name, v)) return -1;
    }
    if (!r->c->n) return gf_fail("%s: its state dict holds no tensor", r->what);
    return 0;
}

static int load(reader *r, const uint8_t *buf, size_t len) {
    if (len >= 2 && buf[0] == 0x80) return gf_fail("%s: a torch.save file in the legacy format (before torch 1.6)\nHINT: "
                                                   "load it in PyTorch and torch.save it again", r->what);
    if (gf_zip_open(&r->zip, buf, len, r->what)) return -1;
    const gf_zip_entry *pe = find_pickle(r);
    uint8_t *owned = NULL;
    const uint8_t *pk = pe ? gf_zip_data(&r->zip, pe, MAX_PICKLE, &owned) : NULL;
    if (!pk) return -1;
    const gf_pk *root = NULL, *sd;
    gf_pickle *p = gf_pickle_read(pk, pe->size, r->what, &root);
    int rc = p && (sd = state_dict(r, root)) ? read_state(r, sd) : -1;
    if (!rc) r->c->epoch = number(root, "epoch"), r->c->val_loss = number(root, "val_loss"), r->c->val_ppl = number(root, "val_ppl");
    gf_pickle_free(p);
    free(owned);
    return rc;
}

int gf_torch_load_buffer(const uint8_t *buf, size_t len, const char *what, gf_torch_ckpt *c) {
    *c = (gf_torch_ckpt){.epoch = NAN, .val_loss = NAN, .val_ppl = NAN};
    reader r = {.what = what, .c = c, .len_in = len};
    const int rc = load(&r, buf, len);
    for (int64_t i = 0; i < r.n_owned; i++) free(r.owned[i]);
    free(r.owned), free(r.owned_of);
    gf_zip_close(&r.zip);
    if (rc) gf_torch_free(c);
    return rc;
}

int gf_torch_load(const char *path, gf_torch_ckpt *c) {
    *c = (gf_torch_ckpt){0};
    size_t len = 0;
    uint8_t *buf = gf_read_file(path, MAX_FILE, &len);
    if (!buf) return -1;
    const int rc = gf_torch_load_buffer(buf, len, gf_show_name(path), c);
    free(buf);
    return rc;
}

void gf_torch_free(gf_torch_ckpt *c) {
    for (int64_t i = 0; c->t && i < c->n; i++) free(c->t[i].name), free(c->t[i].data);
    free(c->t);
    c->t = NULL, c->n = 0;
}

const gf_torch_tensor *gf_torch_find(const gf_torch_ckpt *c, const char *name) {
    for (int64_t i = 0; i < c->n; i++)
        if (!strcmp(c->t[i].name, name)) return &c->t[i];
    return NULL;
}

int gf_torch_to_f32(const gf_torch_tensor *t, float *out) {
    for (int64_t i = 0; i < t->numel; i++) {
        const uint8_t *p = (const uint8_t *)t->data;
        switch (t->dtype) {
        case GF_TT_F32: memcpy(&out[i], p + 4 * i, 4); break;
        case GF_TT_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = gf_f16_to_f32(h); break; }
        case GF_TT_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = gf_bf16_to_f32(h); break; }
        case GF_TT_F64: { double d; memcpy(&d, p + 8 * i, 8); out[i] = (float)d; break; }
        case GF_TT_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); out[i] = (float)v; break; }
        case GF_TT_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); out[i] = (float)v; break; }
        case GF_TT_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); out[i] = (float)v; break; }
        case GF_TT_I8: out[i] = (float)(int8_t)p[i]; break;
        case GF_TT_U8: out[i] = (float)p[i]; break;
        default: return gf_fail("tensor %s is %s, not a number", t->name, gf_torch_dtype_name(t->dtype));
        }
    }
    return 0;
}
