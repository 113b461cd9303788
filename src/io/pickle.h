/* A restricted unpickler: what torch.save writes for a dict of tensors and numbers (Python's pickle protocol 2,
 * and the protocol-4 framing opcodes), and nothing more. It builds a tree of values: None, bools, ints (to 64
 * bits), floats, strings, bytes, tuples, lists, dicts; a global it allows (collections.OrderedDict, torch's
 * tensor rebuilders and storage types) as a name; a call of one (REDUCE) as the callable and its arguments,
 * evaluated by nobody; a persistent id (torch's storage reference) as its tuple. Any other global (os.system,
 * builtins.eval, ...) and any opcode outside that set is refused by name and position, before anything runs:
 * reading a hostile pickle builds no object and calls no function. Every count, length and memo index is
 * checked against the bytes there are, so memory stays within a small multiple of the pickle's size. */
#ifndef GF_IO_PICKLE_H
#define GF_IO_PICKLE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    GF_PK_NONE, GF_PK_BOOL, GF_PK_INT, GF_PK_FLOAT, GF_PK_STR, GF_PK_BYTES, GF_PK_TUPLE, GF_PK_LIST, GF_PK_DICT,
    GF_PK_GLOBAL, /* s: "module.name" */
    GF_PK_CALL,   /* items[0]: the callable (a GF_PK_GLOBAL), items[1]: its arguments (a tuple) */
    GF_PK_PERSID  /* items[0]: the persistent id (torch: ("storage", type, key, location, numel)) */
} gf_pk_kind;

typedef struct gf_pk {
    gf_pk_kind kind;
    int64_t i;            /* BOOL, INT */
    double f;             /* FLOAT */
    const char *s;        /* STR, BYTES (len bytes; a STR is also NUL-terminated), GLOBAL */
    size_t len;
    struct gf_pk **items; /* TUPLE, LIST; DICT: key, value, key, value, ...; CALL, PERSID as above */
    int64_t n, cap;
} gf_pk;

typedef struct gf_pickle gf_pickle; /* owns every value it made */

/* Unpickle buf (len bytes; what names it in errors). The root value in *root, valid until gf_pickle_free.
 * NULL (gf_fail: the opcode or global and its byte offset) on anything outside the supported set. */
gf_pickle *gf_pickle_read(const uint8_t *buf, size_t len, const char *what, const gf_pk **root);
void gf_pickle_free(gf_pickle *p);
/* A dict's value for a string key, or NULL. */
const gf_pk *gf_pk_get(const gf_pk *dict, const char *key);

#endif
