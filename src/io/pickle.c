/* A restricted unpickler (io/pickle.h). */
#include "io/pickle.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* The globals a state_dict's pickle names; any other is refused. */
static const char *const ALLOWED[] = {
    "collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter",
    "torch.FloatStorage", "torch.HalfStorage", "torch.BFloat16Storage", "torch.DoubleStorage", "torch.LongStorage",
    "torch.IntStorage", "torch.ShortStorage", "torch.CharStorage", "torch.ByteStorage", "torch.BoolStorage", NULL};

/* None and the bools are shared, not made: every value made costs the pickle at least two bytes. */
static const gf_pk NONE_V = {.kind = GF_PK_NONE}, TRUE_V = {.kind = GF_PK_BOOL, .i = 1}, FALSE_V = {.kind = GF_PK_BOOL};

struct gf_pickle {
    const uint8_t *b;
    size_t len, pos, at; /* at: the current opcode's offset, for messages */
    const char *what;
    gf_pk **nodes, **stack, **memo;
    int64_t n_nodes, cap_nodes, sp, cap_stack, n_memo, cap_memo, *marks, n_marks, cap_marks;
};

static int bad(gf_pickle *p, const char *why) {
    return gf_fail("%s: pickle byte %zu: %s", p->what, p->at, why);
}

/* Room for one more element in a growing array (cap doubles): 0, or -1 out of memory. */
static int grow(void **a, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 0;
    const int64_t c = *cap ? 2 * *cap : 16;
    void *r = realloc(*a, (size_t)c * size);
    if (!r) return gf_fail("out of memory reading a pickle");
    *a = r, *cap = c;
    return 0;
}

static gf_pk *node(gf_pickle *p, gf_pk_kind k) {
    gf_pk *v = calloc(1, sizeof *v);
    if (!v || grow((void **)&p->nodes, p->n_nodes, &p->cap_nodes, sizeof *p->nodes)) {
        free(v);
        return gf_fail("out of memory reading a pickle"), NULL;
    }
    v->kind = k;
    return p->nodes[p->n_nodes++] = v;
}

static int push(gf_pickle *p, gf_pk *v) {
    if (!v || grow((void **)&p->stack, p->sp, &p->cap_stack, sizeof *p->stack)) return -1;
    p->stack[p->sp++] = v;
    return 0;
}

static gf_pk *pop(gf_pickle *p) {
    const int64_t floor = p->n_marks ? p->marks[p->n_marks - 1] : 0;
    if (p->sp <= floor) return bad(p, "a value is taken from an empty stack"), NULL;
    return p->stack[--p->sp];
}

static int add_item(gf_pk *c, gf_pk *v) {
    if (grow((void **)&c->items, c->n, &c->cap, sizeof *c->items)) return -1;
    c->items[c->n++] = v;
    return 0;
}

/* n bytes at the read position (moved past them), or NULL past the end. */
static const uint8_t *take(gf_pickle *p, uint64_t n) {
    if (n > p->len - p->pos) return bad(p, "the pickle ends inside an opcode (a truncated file)"), NULL;
    const uint8_t *r = p->b + p->pos;
    p->pos += n;
    return r;
}

static uint64_t le(const uint8_t *q, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | q[i];
    return v;
}

/* A string or bytes value of n bytes at the read position. */
static int push_text(gf_pickle *p, gf_pk_kind k, uint64_t n) {
    const uint8_t *q = take(p, n);
    gf_pk *v = q ? node(p, k) : NULL;
    char *s = v ? malloc(n + 1) : NULL;
    if (!s) return v ? gf_fail("out of memory reading a pickle") : -1;
    memcpy(s, q, n);
    s[n] = 0;
    v->s = s, v->len = n;
    return push(p, v);
}

static int push_int(gf_pickle *p, gf_pk_kind k, int64_t i) {
    gf_pk *v = node(p, k);
    if (!v) return -1;
    v->i = i;
    return push(p, v);
}

/* The values above the topmost mark, into c (a new tuple or list); the mark goes. */
static int from_mark(gf_pickle *p, gf_pk_kind k) {
    if (!p->n_marks) return bad(p, "a tuple or list is closed without its MARK");
    const int64_t m = p->marks[--p->n_marks];
    gf_pk *c = node(p, k);
    if (!c) return -1;
    for (int64_t i = m; i < p->sp; i++)
        if (add_item(c, p->stack[i])) return -1;
    p->sp = m;
    return push(p, c);
}

static int tuple_of(gf_pickle *p, int n) {
    gf_pk *c = node(p, GF_PK_TUPLE), *v[3];
    if (!c) return -1;
    for (int i = n - 1; i >= 0; i--)
        if (!(v[i] = pop(p))) return -1;
    for (int i = 0; i < n; i++)
        if (add_item(c, v[i])) return -1;
    return push(p, c);
}

static int global(gf_pickle *p, const char *module, const char *name) {
    char full[300];
    snprintf(full, sizeof full, "%s.%s", module, name);
    for (int i = 0; ALLOWED[i]; i++)
        if (!strcmp(ALLOWED[i], full)) {
            gf_pk *v = node(p, GF_PK_GLOBAL);
            char *s = v ? strdup(full) : NULL;
            if (!s) return v ? gf_fail("out of memory reading a pickle") : -1;
            v->s = s, v->len = strlen(s);
            return push(p, v);
        }
    return gf_fail("%s: pickle byte %zu: it asks for the global %s, which a checkpoint of tensors does not need; "
                   "refused (nothing was run)\nHINT: this reader builds dicts, lists, tuples, numbers, strings and "
                   "tensors only; save the state_dict itself", p->what, p->at, full);
}

/* GLOBAL: "module\nname\n", each at most 255 bytes. */
static int read_global(gf_pickle *p) {
    char part[2][256];
    for (int k = 0; k < 2; k++) {
        size_t n = 0;
        while (p->pos < p->len && p->b[p->pos] != '\n' && n < 255) part[k][n++] = (char)p->b[p->pos++];
        if (p->pos >= p->len || p->b[p->pos] != '\n') return bad(p, "a GLOBAL's name is not closed by a newline");
        p->pos++;
        part[k][n] = 0;
    }
    return global(p, part[0], part[1]);
}

static int stack_global(gf_pickle *p) {
    gf_pk *name = pop(p), *module = name ? pop(p) : NULL;
    if (!module || module->kind != GF_PK_STR || name->kind != GF_PK_STR) return bad(p, "STACK_GLOBAL without two strings");
    if (module->len > 255 || name->len > 255) return bad(p, "a global's name is too long");
    return global(p, module->s, name->s);
}

static int reduce(gf_pickle *p) {
    gf_pk *args = pop(p), *fn = args ? pop(p) : NULL;
    if (!fn || fn->kind != GF_PK_GLOBAL || args->kind != GF_PK_TUPLE) return bad(p, "REDUCE of something other than a global");
    if (!strcmp(fn->s, "collections.OrderedDict")) {
        if (args->n) return bad(p, "OrderedDict called with arguments");
        return push(p, node(p, GF_PK_DICT));
    }
    if (strstr(fn->s, "Storage")) return bad(p, "a storage type is called (storages come as persistent ids)");
    gf_pk *c = node(p, GF_PK_CALL);
    if (!c || add_item(c, fn) || add_item(c, args)) return -1;
    return push(p, c);
}

static int set_items(gf_pickle *p, bool many) {
    int64_t m = p->sp - 2;
    if (many) {
        if (!p->n_marks) return bad(p, "SETITEMS without its MARK");
        m = p->marks[--p->n_marks];
    }
    const int64_t floor = p->n_marks ? p->marks[p->n_marks - 1] : 0;
    if (m < 1 || m - 1 < floor || p->stack[m - 1]->kind != GF_PK_DICT || (p->sp - m) % 2)
        return bad(p, "SETITEM(S) on something other than a dict");
    gf_pk *d = p->stack[m - 1];
    for (int64_t i = m; i < p->sp; i++)
        if (add_item(d, p->stack[i])) return -1;
    p->sp = m;
    return 0;
}

static int append(gf_pickle *p, bool many) {
    int64_t m = p->sp - 1;
    if (many) {
        if (!p->n_marks) return bad(p, "APPENDS without its MARK");
        m = p->marks[--p->n_marks];
    }
    const int64_t floor = p->n_marks ? p->marks[p->n_marks - 1] : 0;
    if (m < 1 || m - 1 < floor || p->stack[m - 1]->kind != GF_PK_LIST) return bad(p, "APPEND(S) on something other than a list");
    for (int64_t i = m; i < p->sp; i++)
        if (add_item(p->stack[m - 1], p->stack[i])) return -1;
    p->sp = m;
    return 0;
}

static int memo_put(gf_pickle *p, uint64_t id) {
    if (!p->sp) return bad(p, "a memo put with nothing on the stack");
    if (id > p->len) return bad(p, "a memo index past any the pickle could have made");
    while ((int64_t)id >= p->cap_memo) {
        const int64_t c = p->cap_memo ? 2 * p->cap_memo : 64;
        gf_pk **r = realloc(p->memo, (size_t)c * sizeof *r);
        if (!r) return gf_fail("out of memory reading a pickle");
        memset(r + p->cap_memo, 0, (size_t)(c - p->cap_memo) * sizeof *r);
        p->memo = r, p->cap_memo = c;
    }
    p->memo[id] = p->stack[p->sp - 1];
    if ((int64_t)id >= p->n_memo) p->n_memo = (int64_t)id + 1;
    return 0;
}

static int memo_get(gf_pickle *p, uint64_t id) {
    if ((int64_t)id >= p->n_memo || !p->memo[id]) return bad(p, "a memo get of an index never put");
    return push(p, p->memo[id]);
}

static int push_float(gf_pickle *p) {
    const uint8_t *q = take(p, 8);
    gf_pk *v = q ? node(p, GF_PK_FLOAT) : NULL;
    if (!v) return -1;
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = u << 8 | q[i]; /* big-endian */
    memcpy(&v->f, &u, sizeof u);
    return push(p, v);
}

static int push_long1(gf_pickle *p) {
    const uint8_t *q = take(p, 1);
    const unsigned n = q ? q[0] : 0;
    if (!q || n > 8) return q ? bad(p, "an integer past 64 bits") : -1;
    const uint8_t *d = take(p, n);
    if (!d) return -1;
    uint64_t u = le(d, (int)n);
    if (n && n < 8 && (d[n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n); /* two's complement, sign-extended */
    return push_int(p, GF_PK_INT, (int64_t)u);
}

static int mark(gf_pickle *p) {
    if (grow((void **)&p->marks, p->n_marks, &p->cap_marks, sizeof *p->marks)) return -1;
    p->marks[p->n_marks++] = p->sp;
    return 0;
}

static int build(gf_pickle *p) { /* OrderedDict's attributes (a state_dict's _metadata): read, then dropped */
    gf_pk *state = pop(p);
    if (!state || !p->sp || (p->stack[p->sp - 1]->kind != GF_PK_DICT && p->stack[p->sp - 1]->kind != GF_PK_CALL))
        return bad(p, "BUILD of something other than a dict or a tensor");
    return 0;
}

static int persid(gf_pickle *p) {
    gf_pk *pid = pop(p), *v = pid ? node(p, GF_PK_PERSID) : NULL;
    if (!v || add_item(v, pid)) return -1;
    return push(p, v);
}

/* Integers and text: the opcodes with a length or value after them. 1 handled, 0 not this group, -1 error. */
static int scalar_op(gf_pickle *p, uint8_t op) {
    const uint8_t *q;
    switch (op) {
    case 'K': return (q = take(p, 1)) ? push_int(p, GF_PK_INT, q[0]) : -1;
    case 'M': return (q = take(p, 2)) ? push_int(p, GF_PK_INT, (int64_t)le(q, 2)) : -1;
    case 'J': return (q = take(p, 4)) ? push_int(p, GF_PK_INT, (int32_t)(uint32_t)le(q, 4)) : -1;
    case 0x8a: return push_long1(p);
    case 'G': return push_float(p);
    case 0x88: return push(p, (gf_pk *)&TRUE_V);
    case 0x89: return push(p, (gf_pk *)&FALSE_V);
    case 'N': return push(p, (gf_pk *)&NONE_V);
    case 'X': return (q = take(p, 4)) ? push_text(p, GF_PK_STR, le(q, 4)) : -1;
    case 0x8c: return (q = take(p, 1)) ? push_text(p, GF_PK_STR, q[0]) : -1;
    case 0x8d: return (q = take(p, 8)) ? push_text(p, GF_PK_STR, le(q, 8)) : -1;
    case 'B': return (q = take(p, 4)) ? push_text(p, GF_PK_BYTES, le(q, 4)) : -1;
    case 'C': return (q = take(p, 1)) ? push_text(p, GF_PK_BYTES, q[0]) : -1;
    case 0x8e: return (q = take(p, 8)) ? push_text(p, GF_PK_BYTES, le(q, 8)) : -1;
    default: return 1;
    }
}

/* One opcode (not STOP). 0, or -1 (gf_fail). */
static int step(gf_pickle *p, uint8_t op) {
    const uint8_t *q;
    int r = scalar_op(p, op);
    if (r <= 0) return r;
    switch (op) {
    case 0x80: return (q = take(p, 1)) && q[0] <= 5 ? 0 : q ? bad(p, "an unknown pickle protocol") : -1;
    case 0x95: return take(p, 8) ? 0 : -1; /* FRAME: its length is not needed */
    case '}': return push(p, node(p, GF_PK_DICT));
    case ']': return push(p, node(p, GF_PK_LIST));
    case ')': return push(p, node(p, GF_PK_TUPLE));
    case '(': return mark(p);
    case 't': return from_mark(p, GF_PK_TUPLE);
    case 'l': return from_mark(p, GF_PK_LIST);
    case 0x85: case 0x86: case 0x87: return tuple_of(p, op - 0x84);
    case 'q': return (q = take(p, 1)) ? memo_put(p, q[0]) : -1;
    case 'r': return (q = take(p, 4)) ? memo_put(p, le(q, 4)) : -1;
    case 0x94: return memo_put(p, (uint64_t)p->n_memo);
    case 'h': return (q = take(p, 1)) ? memo_get(p, q[0]) : -1;
    case 'j': return (q = take(p, 4)) ? memo_get(p, le(q, 4)) : -1;
    case 'c': return read_global(p);
    case 0x93: return stack_global(p);
    case 'R': return reduce(p);
    case 'b': return build(p);
    case 'Q': return persid(p);
    case 's': return set_items(p, false);
    case 'u': return set_items(p, true);
    case 'a': return append(p, false);
    case 'e': return append(p, true);
    default: {
        char why[96];
        snprintf(why, sizeof why, "opcode 0x%02x is not one a checkpoint of tensors needs; refused", op);
        return bad(p, why);
    }
    }
}

gf_pickle *gf_pickle_read(const uint8_t *buf, size_t len, const char *what, const gf_pk **root) {
    gf_pickle *p = calloc(1, sizeof *p);
    if (!p) return gf_fail("out of memory"), NULL;
    *p = (gf_pickle){.b = buf, .len = len, .what = what};
    bool stopped = false;
    while (p->pos < p->len && !stopped) {
        p->at = p->pos;
        const uint8_t op = p->b[p->pos++];
        if ((stopped = op == '.') && p->sp == 1 && !p->n_marks) {
            *root = p->stack[0];
            return p;
        }
        if (!stopped && step(p, op)) {
            gf_pickle_free(p);
            return NULL;
        }
    }
    bad(p, stopped ? "STOP with other than one value left" : "the pickle ends without its STOP (a truncated file)");
    gf_pickle_free(p);
    return NULL;
}

void gf_pickle_free(gf_pickle *p) {
    if (!p) return;
    for (int64_t i = 0; i < p->n_nodes; i++) {
        free((void *)p->nodes[i]->s);
        free(p->nodes[i]->items);
        free(p->nodes[i]);
    }
    free(p->nodes), free(p->stack), free(p->memo), free(p->marks), free(p);
}

const gf_pk *gf_pk_get(const gf_pk *d, const char *key) {
    for (int64_t i = 0; d && d->kind == GF_PK_DICT && i + 1 < d->n; i += 2)
        if (d->items[i]->kind == GF_PK_STR && !strcmp(d->items[i]->s, key)) return d->items[i + 1];
    return NULL;
}
