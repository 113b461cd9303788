#include "io/json_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

gf_jnum gf_json_num(double v, char conv, int prec) {
    gf_jnum r;
    if (prec < 0) prec = 0;
    if (prec > 30) prec = 30;
    if (!isfinite(v)) snprintf(r.s, sizeof r.s, "null");
    else if (conv == 'f' && fabs(v) < 1e21) snprintf(r.s, sizeof r.s, "%.*f", prec, v);
    else if (conv == 'f') snprintf(r.s, sizeof r.s, "%.17g", v);
    else snprintf(r.s, sizeof r.s, "%.*g", prec, v);
    return r;
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The name object o holds twice (NULL: none): its members sorted by name, neighbours compared. */
static const char *twice_in(const cJSON *o) {
    int k = 0, n = cJSON_GetArraySize(o);
    const cJSON **m = n > 1 ? malloc((size_t)n * sizeof *m) : NULL, *it;
    if (!m) return NULL; /* 0 or 1 member, or out of memory: read as cJSON reads it */
    cJSON_ArrayForEach(it, o) if (it->string) m[k++] = it;
    qsort(m, (size_t)k, sizeof *m, by_name);
    const char *dup = NULL;
    for (int i = 1; i < k && !dup; i++)
        if (!strcmp(m[i - 1]->string, m[i]->string)) dup = m[i]->string;
    free(m);
    return dup;
}

int gf_json_duplicate_key(const cJSON *v, char *path, size_t n) {
    const size_t at = strlen(path);
    const char *dup = cJSON_IsObject(v) ? twice_in(v) : NULL;
    if (dup) {
        snprintf(path + at, n - at, "%s%s", at ? "." : "", dup);
        return 1;
    }
    int i = 0;
    for (const cJSON *c = v ? v->child : NULL; c; c = c->next, i++) {
        if (cJSON_IsObject(v)) snprintf(path + at, n - at, "%s%s", at ? "." : "", c->string ? c->string : "");
        else snprintf(path + at, n - at, "[%d]", i);
        if (gf_json_duplicate_key(c, path, n)) return 1;
        path[at] = '\0';
    }
    return 0;
}
