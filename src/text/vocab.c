#include "text/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "io/text.h"

void gf_vocab_init(gf_vocab *v) { memset(v, 0, sizeof *v); }

void gf_vocab_free(gf_vocab *v) {
    for (int64_t i = 0; i < v->n; i++) free(v->str[i]);
    free(v->str);
    free(v->len);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

static uint64_t hash_str(const char *s, size_t n) { return gf_hash_bytes(s, n, 0); }

int32_t gf_vocab_find(const gf_vocab *v, const char *s, size_t n) {
    if (!v->n_slots) return -1;
    uint64_t mask = (uint64_t)v->n_slots - 1;
    for (uint64_t h = hash_str(s, n) & mask;; h = (h + 1) & mask) {
        int32_t id = v->slots[h];
        if (id < 0) return -1;
        if (v->len[id] == n && !memcmp(v->str[id], s, n)) return id;
    }
}

static int rehash(gf_vocab *v, int64_t n_slots) {
    int32_t *slots = malloc((size_t)n_slots * sizeof *slots);
    if (!slots) return gf_fail("out of memory growing a vocabulary");
    memset(slots, 0xff, (size_t)n_slots * sizeof *slots);
    uint64_t mask = (uint64_t)n_slots - 1;
    for (int64_t id = 0; id < v->n; id++) {
        uint64_t h = hash_str(v->str[id], v->len[id]) & mask;
        while (slots[h] >= 0) h = (h + 1) & mask;
        slots[h] = (int32_t)id;
    }
    free(v->slots);
    v->slots = slots;
    v->n_slots = n_slots;
    return 0;
}

int32_t gf_vocab_add_text(gf_vocab *v, const char *s, size_t n) {
    if (memchr(s, '\0', n)) /* a stored tokenizer is JSON text: the entry would come back cut at the NUL */
        return gf_fail("the text holds a NUL byte (in a %zu-byte word or character), which a stored tokenizer "
                       "cannot keep; remove the NUL bytes, or use --tokenizer byte", n);
    return gf_vocab_add(v, s, n);
}

int32_t gf_vocab_add(gf_vocab *v, const char *s, size_t n) {
    int32_t id = gf_vocab_find(v, s, n);
    if (id >= 0) return id;
    if (v->n >= 2147483647) return gf_fail("vocabulary has more than 2^31 entries");
    if (v->n == v->cap) {
        int64_t nc = v->cap ? v->cap * 2 : 1024;
        char **ns = realloc(v->str, (size_t)nc * sizeof *ns);
        if (!ns) return gf_fail("out of memory growing a vocabulary");
        v->str = ns;
        uint32_t *nl = realloc(v->len, (size_t)nc * sizeof *nl);
        if (!nl) return gf_fail("out of memory growing a vocabulary");
        v->len = nl;
        v->cap = nc;
    }
    if ((v->n + 1) * 2 > v->n_slots && rehash(v, v->n_slots ? v->n_slots * 2 : 2048)) return -1;
    char *c = malloc(n + 1);
    if (!c) return gf_fail("out of memory growing a vocabulary");
    memcpy(c, s, n);
    c[n] = '\0';
    id = (int32_t)v->n++;
    v->str[id] = c;
    v->len[id] = (uint32_t)n;
    uint64_t mask = (uint64_t)v->n_slots - 1, h = hash_str(s, n) & mask;
    while (v->slots[h] >= 0) h = (h + 1) & mask;
    v->slots[h] = id;
    return id;
}

uint64_t gf_vocab_hash(const gf_vocab *v) {
    uint64_t h = gf_hash_bytes(&v->n, sizeof v->n, 0);
    for (int64_t i = 0; i < v->n; i++) {
        h = gf_hash_bytes(v->str[i], v->len[i], h);
        h = gf_hash_bytes("\n", 1, h); /* separator */
    }
    return h;
}

int gf_ids_push(gf_ids *a, int32_t id) {
    if (a->n == a->cap) {
        int64_t nc = a->cap ? a->cap * 2 : 4096;
        int32_t *nv = realloc(a->v, (size_t)nc * sizeof *nv);
        if (!nv) return gf_fail("out of memory collecting token ids");
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = id;
    return 0;
}

void gf_ids_free(gf_ids *a) {
    free(a->v);
    memset(a, 0, sizeof *a);
}
