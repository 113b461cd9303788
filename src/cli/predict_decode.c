/* grassflow predict on an encoder-decoder (task g2p): each line of the input a source (a word), its best
 * target (the phonemes) decoded by the library (gf_model_decode), one line each: "input<TAB>output<TAB>score",
 * or JSON lines. This file reads lines and prints; the task turns a line into source ids. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

/* The target's pieces between single spaces into a malloc'd string. */
static char *pieces(const gf_tokenizer *tok, const int32_t *ids, int64_t n) {
    size_t cap = 16, len = 0;
    char *s = malloc(cap);
    for (int64_t i = 0; s && i < n; i++) {
        size_t pl = 0;
        const char *p = gf_tokenizer_piece(tok, ids[i], &pl);
        if (!p) p = "?", pl = 1;
        if (len + pl + 2 > cap) {
            cap = 2 * (len + pl + 2);
            char *g = realloc(s, cap);
            if (!g) free(s);
            s = g;
            if (!s) break;
        }
        if (i) s[len++] = ' ';
        memcpy(s + len, p, pl);
        len += pl;
    }
    if (s) s[len] = '\0';
    return s;
}

static void print_one(const eval_args *a, int64_t index, const char *line, const char *out, double score) {
    if (a->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", (double)index);
        cJSON_AddStringToObject(o, "input", line);
        cJSON_AddStringToObject(o, "output", out);
        cJSON_AddNumberToObject(o, "score", score);
        char *t = gf_json_utf8(cJSON_PrintUnformatted(o));
        if (t) printf("%s\n", t);
        free(t);
        cJSON_Delete(o);
        return;
    }
    char shown[1024];
    gf_escape_tsv(shown, sizeof shown, line);
    printf("%s\t%s\t%.6f\n", shown, out, score);
}

/* Line `index` (read from `where`) decoded and printed: an exit code. */
static int decode_line(gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t, const eval_args *a,
                       const gf_decode_opts *o, const char *line, size_t len, const char *where, int64_t index) {
    int32_t *src = NULL, *out = malloc((size_t)o->max_len * sizeof *out);
    int64_t S = 0, n = 0;
    double score = 0;
    if (!out) return cli_error("out of memory");
    if (gf_task_source_ids(t->task, t->options.bytes, line, len, where, &src, &S) ||
        gf_ensemble_decode(a->en ? a->en->models : &m, a->en ? a->en->n : 1, src, S, o, out, &n, &score)) {
        free(src), free(out);
        const char *e = gf_last_error();
        return strncmp(e, where, strlen(where)) ? cli_error("%s: %s", where, e) : cli_error("%s", e);
    }
    char *text = pieces(tok, out, n), shown[1100];
    size_t from = 0, to = len; /* the word as the task read it: without the blanks around it (a CR too) */
    while (from < to && strchr(" \t\r", line[to - 1])) to--;
    while (from < to && strchr(" \t", line[from])) from++;
    snprintf(shown, sizeof shown, "%.*s", (int)(to - from), line + from);
    if (text) print_one(a, index, shown, text, score);
    int rc = text ? EXIT_OK : cli_error("out of memory");
    if (!rc && a->align_dir) rc = cli_predict_align(m, tok, o, src, S, out, n, line, index, a);
    free(text), free(src), free(out);
    return rc;
}

int cli_predict_decode(gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t, const eval_args *a) {
    if (!tok || gf_tokenizer_eos_id(tok) < 0)
        return cli_error("predict: %s carries no target tokenizer with an end token; it cannot name what it decodes",
                         a->ckpt);
    if (a->align_dir && gf_mkdir_p(a->align_dir)) return cli_error("--align-dir: %s", gf_last_error()); /* or a file */
    gf_decode_opts o = a->dec;
    o.bos = o.eos = gf_tokenizer_eos_id(tok);
    for (int64_t k = 0; a->dec.max_len == 0 && k < (a->en ? a->en->n : 1); k++) { /* the output buffer's size */
        const int64_t l = gf_decode_max_len(a->en ? a->en->models[k] : m);
        o.max_len = k == 0 || l < o.max_len ? l : o.max_len;
    }
    size_t size = 0;
    char *text = (char *)gf_read_file(a->corpus, (size_t)64 << 20, &size); /* words: 64 MiB is millions */
    if (!text) return cli_error("%s", gf_last_error());
    if (strlen(text) != size) {
        free(text);
        return cli_error("%s: holds a NUL byte; expected a text file of words, one a line", gf_show_name(a->corpus));
    }
    int rc = size ? EXIT_OK : cli_error("%s: an empty file; expected words, one a line", gf_show_name(a->corpus));
    int64_t i = 0, line_no = 0;
    for (char *p = text; rc == EXIT_OK && *p && (a->limit == 0 || i < a->limit); line_no++) {
        char *end = strchr(p, '\n'), where[1100];
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(where, sizeof where, "%s:%lld", gf_show_name(a->corpus), (long long)line_no + 1);
        if (end) *end = '\0';
        rc = decode_line(m, tok, t, a, &o, p, len, where, i++);
        if (!rc && i % 256 == 0 && cli_stdout_failed()) rc = EXIT_RUNTIME; /* a full disk or a closed pipe: stop */
        p = end ? end + 1 : p + len;
    }
    free(text);
    return rc;
}
