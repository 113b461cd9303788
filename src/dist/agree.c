/* The ranks of a data-parallel job compare what they were started with before they first work together
 * (gf_dist_agree in grassflow.h). Every rank sends the same fixed-size record (whatever it states), so the
 * comparison itself cannot be what goes wrong between ranks that disagree. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/comm.h"
#include "base/error.h"
#include "grassflow_plugin.h"

uint64_t gf_dist_hash(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    h ^= 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* One rank's record: what it is starting and the signature of its items' names, then each item's value
 * (a text's hash) and its text's first bytes. */
typedef struct {
    uint64_t n, signature;
    char what[GF_AGREE_TEXT];
    struct {
        uint64_t v;
        char text[GF_AGREE_TEXT];
    } item[GF_AGREE_MAX];
} record;

static uint64_t hash_str(const char *s, uint64_t h) { return s ? gf_dist_hash(s, strlen(s) + 1, h) : h; }

static void fill(record *r, const char *what, const gf_agree_item *items, int n) {
    memset(r, 0, sizeof *r);
    r->n = (uint64_t)n;
    snprintf(r->what, sizeof r->what, "%s", what);
    r->signature = hash_str(what, 0);
    for (int k = 0; k < n; k++) {
        const gf_agree_item *it = &items[k];
        r->signature = hash_str(it->label, hash_str(it->group, r->signature)) ^ (uint64_t)it->kind;
        switch (it->kind) {
        case GF_AGREE_INT: r->item[k].v = (uint64_t)it->i; break;
        case GF_AGREE_REAL: memcpy(&r->item[k].v, &it->f, sizeof it->f); break;
        case GF_AGREE_HASH: r->item[k].v = it->h; break;
        default:
            r->item[k].v = hash_str(it->text ? it->text : "", 0);
            snprintf(r->item[k].text, sizeof r->item[k].text, "%s", it->text ? it->text : "");
        }
    }
}

/* "A vs B" for item k of rank q against rank 0, into out. */
static void values(const gf_agree_item *it, const record *q, const record *r0, int k, char *out, size_t n) {
    const uint64_t a = q->item[k].v, b = r0->item[k].v;
    double fa, fb;
    memcpy(&fa, &a, sizeof fa), memcpy(&fb, &b, sizeof fb);
    const char *ell_a = strlen(q->item[k].text) == GF_AGREE_TEXT - 1 ? "..." : "";
    const char *ell_b = strlen(r0->item[k].text) == GF_AGREE_TEXT - 1 ? "..." : "";
    switch (it->kind) {
    case GF_AGREE_INT: snprintf(out, n, "%" PRId64 " vs %" PRId64, (int64_t)a, (int64_t)b); break;
    case GF_AGREE_REAL: snprintf(out, n, "%.9g vs %.9g", fa, fb); break;
    case GF_AGREE_HASH: snprintf(out, n, "%016" PRIx64 " vs %016" PRIx64, a, b); break;
    default: snprintf(out, n, "'%s%s' vs '%s%s'", q->item[k].text, ell_a, r0->item[k].text, ell_b);
    }
}

#define HINT "\nHINT: start every rank with the same command on the same files (mpirun -np N grassflow ...; a folder " \
             "every node sees at the same path): docs/distributed.md"

/* The message for rank q's record against rank 0's (they differ). */
static int differ(const char *what, const gf_agree_item *items, int n, const record *q, const record *r0, int rank) {
    if (q->signature != r0->signature || q->n != r0->n || q->n != (uint64_t)n)
        return gf_fail("rank %d is starting %s with other things to agree on than rank 0 starting %s: the ranks run "
                       "other commands, tasks or grassflow builds" HINT, rank, q->what, r0->what);
    for (int k = 0; k < n; k++) {
        if (q->item[k].v == r0->item[k].v) continue;
        const gf_agree_item *it = &items[k];
        char v[4 * GF_AGREE_TEXT + 64];
        values(it, q, r0, k, v, sizeof v);
        return gf_fail("rank %d's %s differs from rank 0's: %s%s%s%s%s; every rank of a data-parallel job must start "
                       "%s with the same" HINT, rank, it->group, it->label ? it->label : "", it->label ? " " : "", v,
                       it->unit ? " " : "", it->unit ? it->unit : "", what);
    }
    return 0;
}

int gf_dist_agree(const char *what, const gf_agree_item *items, int n) {
    const int np = gf_comm_size();
    if (np == 1) return 0;
    if (n < 0 || n > GF_AGREE_MAX) return gf_fail("gf_dist_agree: %d items; at most %d", n, GF_AGREE_MAX);
    record *all = calloc((size_t)np + 1, sizeof *all);
    if (!all) return gf_fail("out of memory comparing the %d ranks", np);
    fill(&all[np], what, items, n);
    int rc = gf_comm_allgather(&all[np], all, (int64_t)sizeof *all);
    for (int q = 1; !rc && q < np; q++)
        if (memcmp(&all[q].n, &all[0].n, sizeof all[0].n + sizeof all[0].signature) ||
            memcmp(all[q].item, all[0].item, sizeof all[0].item))
            rc = differ(what, items, n, &all[q], &all[0], q);
    free(all);
    return rc;
}
