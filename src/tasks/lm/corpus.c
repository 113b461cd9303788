#include "tasks/lm/corpus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/mem.h"
#include "grassflow_plugin.h"
#include "io/file.h"
#include "io/text.h"
#include "text/unicode.h"

#define MAX_CORPUS ((size_t)1 << 34) /* 16 GiB of text */
#define MAX_TEXT_HINT "a corpus file may hold a sixth of the machine's memory (or of ulimit -v) in text, so that its " \
                      "tokens fit too; GRASSFLOW_MAX_TEXT=BYTES sets another limit"
#define CACHE_MAGIC "GFTOKEN1"
/* bump when a tokenizer changes what it produces (the Unicode tables enter the key on their own) or the
 * header changes (2: the counts of each split) */
#define CACHE_VERSION 2u

static const char *const SPLITS[3] = {"train", "valid", "test"};
const char *gf_split_name(int s) { return (s >= 0 && s < 3) ? SPLITS[s] : "?"; }
int gf_split_index(const char *name) {
    for (int s = 0; s < 3; s++)
        if (!strcmp(name, SPLITS[s])) return s;
    return -1;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

void gf_corpus_free(gf_corpus *c) {
    if (!c) return;
    for (int s = 0; s < 3; s++) gf_ids_free(&c->split[s]);
    gf_tokenizer_free(c->tok);
    free(c->name);
    free(c);
}

static int64_t count_lines(const char *t, size_t n) {
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) k += t[i] == '\n';
    return k + (n > 0 && t[n - 1] != '\n');
}

/* ---- the cache ------------------------------------------------------------------------------------ */

typedef struct {
    char magic[8];
    uint32_t version, pad;
    uint64_t key, vocab_hash, tok_json_bytes;
    int64_t lines[3], n[3];
    gf_text_counts counts[3];
} cache_header;

int gf_corpus_cache_load(gf_corpus *c, const char *path, uint64_t key, const gf_tokenizer *fixed) {
    size_t size;
    unsigned char *buf = gf_read_file(path, MAX_CORPUS * 4, &size);
    if (!buf) return -1;
    cache_header h;
    int ok = size >= sizeof h;
    if (ok) memcpy(&h, buf, sizeof h);
    ok = ok && !memcmp(h.magic, CACHE_MAGIC, 8) && h.version == CACHE_VERSION && h.key == key &&
         h.tok_json_bytes < size;
    uint64_t need = sizeof h + h.tok_json_bytes;
    for (int s = 0; ok && s < 3; s++) {
        ok = h.n[s] >= 0 && h.n[s] < (int64_t)1 << 40 && h.counts[s].tokens == h.n[s] && h.counts[s].words >= 0 &&
             h.counts[s].unknown >= 0 && h.counts[s].unknown <= h.n[s] && h.counts[s].skipped >= 0 &&
             (h.counts[s].skipped == 0) == (h.counts[s].first_skipped == -1) && h.counts[s].first_skipped >= -1;
        need += (uint64_t)h.n[s] * 4;
    }
    ok = ok && need == size;
    gf_tokenizer *tok = NULL;
    if (ok && !fixed) {
        char *js = malloc(h.tok_json_bytes + 1);
        if (js) {
            memcpy(js, buf + sizeof h, h.tok_json_bytes);
            js[h.tok_json_bytes] = '\0';
            tok = gf_tokenizer_from_json(js, path);
            free(js);
        }
        ok = tok && gf_vocab_hash(&tok->vocab) == h.vocab_hash;
    } else if (ok) {
        ok = gf_vocab_hash(&fixed->vocab) == h.vocab_hash;
    }
    if (!ok) {
        gf_tokenizer_free(tok);
        free(buf);
        return -1;
    }
    const unsigned char *p = buf + sizeof h + h.tok_json_bytes;
    const int64_t V = (fixed ? fixed : tok)->vocab.n, n_all = h.n[0] + h.n[1] + h.n[2];
    for (int64_t i = 0; i < n_all; i++) { /* every id inside the vocabulary: a cache is a file like any other */
        int32_t id;
        memcpy(&id, p + i * 4, 4);
        if (id < 0 || id >= V) {
            gf_tokenizer_free(tok);
            free(buf);
            return -1;
        }
    }
    for (int s = 0; s < 3; s++) {
        c->split[s].v = malloc((size_t)(h.n[s] ? h.n[s] : 1) * sizeof(int32_t));
        if (!c->split[s].v) {
            gf_tokenizer_free(tok);
            free(buf);
            return -1;
        }
        memcpy(c->split[s].v, p, (size_t)h.n[s] * 4);
        c->split[s].n = c->split[s].cap = h.n[s];
        c->lines[s] = h.lines[s];
        c->counts[s] = h.counts[s];
        p += h.n[s] * 4;
    }
    c->tok = tok;
    free(buf);
    return 0;
}

static int cache_store(const gf_corpus *c, const gf_tokenizer *tok, const char *path, uint64_t key) {
    cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.version = CACHE_VERSION;
    h.key = key;
    h.vocab_hash = gf_vocab_hash(&tok->vocab);
    char *js = gf_tokenizer_to_json(tok);
    if (!js) return -1;
    h.tok_json_bytes = strlen(js);
    for (int s = 0; s < 3; s++) {
        h.lines[s] = c->lines[s];
        h.n[s] = c->split[s].n;
        h.counts[s] = c->counts[s];
    }
    gf_atomic_file *f = gf_atomic_open(path);
    int rc = f ? gf_atomic_write(f, &h, sizeof h) : -1;
    if (!rc) rc = gf_atomic_write(f, js, h.tok_json_bytes);
    for (int s = 0; s < 3 && !rc; s++) rc = gf_atomic_write(f, c->split[s].v, (size_t)c->split[s].n * 4);
    free(js);
    if (!f) return -1;
    if (rc) {
        gf_atomic_abort(f);
        return -1;
    }
    return gf_atomic_commit(f);
}

static size_t g_max_text; /* 0: by memory */

void gf_corpus_set_max_text(size_t bytes) { g_max_text = bytes; }

size_t gf_corpus_max_text(void) {
    if (g_max_text) return g_max_text;
    const uint64_t mem = gf_mem_limit();
    return mem / 6 < MAX_CORPUS ? (size_t)(mem / 6) : MAX_CORPUS;
}

static int mkdir_p(const char *dir) {
    char tmp[GF_PATH_MAX];
    if (gf_path_join(tmp, sizeof tmp, NULL, dir)) return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    if (mkdir(tmp, 0755) == 0 || errno == EEXIST) return 0;
    return gf_fail_write(errno, "cannot create the cache folder %s", tmp);
}

/* ---- loading ---------------------------------------------------------------------------------------- */

/* The one of SPLIT.txt.xz, SPLIT.txt, SPLIT.xz or SPLIT in dir, or of the names of WikiText's official
 * releases, wiki.SPLIT.raw and wiki.SPLIT.tokens (each also .xz), so that a folder unpacked from
 * wikitext-2-raw-v1.zip is read as it is (dir fits in n with room for the longest name): 0; 1 if there is
 * none; -1 after an error naming two that are there (train.txt and train.txt.xz: which to read is not
 * clear). */
static int find_split(const char *dir, const char *split, char *out, size_t n) {
    const char *forms[] = {"%s/%s.txt.xz", "%s/%s.txt", "%s/%s.xz", "%s/%s", "%s/wiki.%s.raw", "%s/wiki.%s.raw.xz",
                           "%s/wiki.%s.tokens", "%s/wiki.%s.tokens.xz"};
    char first[GF_PATH_MAX] = "";
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        snprintf(out, n, forms[i], dir, split);
        if (!is_file(out)) continue;
        if (first[0])
            return gf_fail("%s and %s are both there; expected one file for the %s split: which to read is not clear"
                           "\nHINT: move one of them out of %s", first, out, split, gf_show_name(dir));
        snprintf(first, sizeof first, "%s", out);
    }
    if (first[0]) snprintf(out, n, "%s", first);
    return first[0] ? 0 : 1;
}

/* Where a corpus's text is: one file (split 90/5/5 later) or three split files. */
typedef struct {
    char path[3][GF_PATH_MAX];
    int single;
    const char *default_tok;
    char note[GF_PATH_MAX + 256]; /* what a user should know of where the splits come from ("": nothing) */
} corpus_files;

/* The folder of the shipped data `name` (under data_dir, default data/) into root, for built-in corpus `corpus`:
 * 0, or -1 when it is not there. */
static int builtin_root(const char *data_dir, const char *corpus, const char *name, char *root, size_t n) {
    if (gf_path_join(root, n, data_dir ? data_dir : "data", name)) return -1;
    if (!is_dir(root))
        return gf_fail("corpus %s: directory %s not found\nHINT: run from the grassflow checkout, or set "
                       "GRASSFLOW_DATA to its data/ directory", corpus, gf_show_name(root));
    return 0;
}

/* The built-in wikitext-2-raw: the raw release's validation and test splits (data/wikitext-2-raw) with the
 * tokenized release's training split (data/wikitext-2; the raw one is not shipped: data/README.md), which a
 * word vocabulary is built from and a run trains on, said in f->note. */
static int locate_raw(const char *data_dir, corpus_files *f) {
    char root[2][GF_PATH_MAX - 24];
    if (builtin_root(data_dir, "wikitext-2-raw", "wikitext-2", root[0], sizeof root[0]) ||
        builtin_root(data_dir, "wikitext-2-raw", "wikitext-2-raw", root[1], sizeof root[1]))
        return -1;
    for (int s = 0; s < 3; s++) {
        const int found = find_split(root[s > 0], SPLITS[s], f->path[s], sizeof f->path[s]);
        if (found)
            return found < 0 ? -1 : gf_fail("corpus wikitext-2-raw: no %s split in %s", SPLITS[s], gf_show_name(root[s > 0]));
    }
    f->default_tok = "word";
    snprintf(f->note, sizeof f->note, "corpus wikitext-2-raw: the raw release's valid and test splits; its train split "
             "is the tokenized release's (%s: the same articles, <unk> for rare words), as the raw one is not shipped",
             f->path[0]);
    return 0;
}

static int locate_corpus(const char *spec, const char *data_dir, corpus_files *f) {
    char root[GF_PATH_MAX - 24]; /* room for "/wiki.valid.tokens.xz" */
    f->single = 0;
    f->default_tok = "char";
    f->note[0] = '\0';
    if (!strcmp(spec, "wikitext-2-raw")) return locate_raw(data_dir, f);
    if (!strcmp(spec, "wikitext-2") || !strcmp(spec, "tinyshakespeare")) {
        if (builtin_root(data_dir, spec, spec, root, sizeof root)) return -1;
        if (!strcmp(spec, "wikitext-2")) {
            f->default_tok = "word";
        } else {
            snprintf(f->path[0], sizeof f->path[0], "%s/input.txt.xz", root); /* fits: root is shorter */
            f->single = 1;
        }
    } else if (is_dir(spec)) {
        if (gf_path_join(root, sizeof root, NULL, spec)) return -1;
    } else if (is_file(spec)) {
        if (gf_path_join(f->path[0], sizeof f->path[0], NULL, spec)) return -1;
        f->single = 1;
    } else {
        return gf_fail("--corpus %s: not a built-in corpus (wikitext-2, wikitext-2-raw, tinyshakespeare), a directory or "
                       "a file",
                       gf_show_name(spec));
    }
    for (int s = 0; !f->single && s < 3; s++) {
        const int found = find_split(root, SPLITS[s], f->path[s], sizeof f->path[s]);
        if (found < 0) return -1;
        if (found > 0)
            return gf_fail("corpus %s: no %s split: expected %s/%s.txt, %s.txt.xz or wiki.%s.raw (WikiText's own name)",
                           gf_show_name(spec), SPLITS[s], gf_show_name(root), SPLITS[s], SPLITS[s], SPLITS[s]);
    }
    return 0;
}

/* The tokenizer kind of ts (or of fixed); a WordPiece vocabulary is loaded into *wp. */
static int pick_tokenizer(const char *ts, const gf_tokenizer *fixed, gf_tok_kind *kind, gf_tokenizer **wp) {
    if (fixed) *kind = fixed->kind;
    else if (!strcmp(ts, "word")) *kind = GF_TOK_WORD;
    else if (!strcmp(ts, "char")) *kind = GF_TOK_CHAR;
    else if (!strcmp(ts, "byte")) *kind = GF_TOK_BYTE;
    else if (!strncmp(ts, "wordpiece:", 10) && ts[10]) *kind = GF_TOK_WORDPIECE;
    else return gf_fail("--tokenizer %s: expected word, char, byte or wordpiece:VOCAB_FILE", ts);
    if (!fixed && *kind == GF_TOK_WORDPIECE) {
        if (!(*wp = gf_wordpiece_load(ts + 10))) return -1;
        /* a language-model corpus's "<unk>" is one unknown word (WikiText's marker), not four easy pieces */
        if (gf_tokenizer_set_unk_text(*wp, GF_CORPUS_UNK_TEXT)) return -1;
    }
    return 0;
}

/* Split text[0] (tlen[0] bytes) 90 / 5 / 5 at line boundaries into text[0..2]: three contiguous parts, in
 * the file's order (nothing is shuffled; README, "Corpora"). */
static int split_single(char **text, size_t *tlen, const char *path) {
    const char *t = text[0];
    size_t n = tlen[0], cut[2];
    for (int k = 0; k < 2; k++) {
        size_t at = n / 100 * (k == 0 ? 90 : 95);
        while (at < n && t[at] != '\n') at++;
        cut[k] = at < n ? at + 1 : n;
    }
    text[1] = malloc(cut[1] - cut[0] + 1);
    text[2] = malloc(n - cut[1] + 1);
    if (!text[1] || !text[2]) return gf_fail("out of memory splitting %s", gf_show_name(path));
    memcpy(text[1], t + cut[0], cut[1] - cut[0]);
    tlen[1] = cut[1] - cut[0];
    memcpy(text[2], t + cut[1], n - cut[1]);
    tlen[2] = n - cut[1];
    tlen[0] = cut[0];
    if (tlen[0] == 0 || tlen[1] == 0 || tlen[2] == 0)
        return gf_fail("%s: cannot split into train/valid/test (90/5/5 at line ends): %lld line(s) in %zu bytes; "
                       "expected enough lines for three non-empty parts\nHINT: give a directory holding train.txt, "
                       "valid.txt and test.txt instead", gf_show_name(path), (long long)count_lines(t, n), n);
    return 0;
}

/* A vocabulary built from the text: word, the training split's words; char, every split's characters. */
static gf_tokenizer *build_vocab(gf_tok_kind kind, char *const *text, const size_t *tlen, const char *spec) {
    gf_tokenizer *tok;
    if (kind == GF_TOK_CHAR) {
        size_t all = tlen[0] + tlen[1] + tlen[2];
        char *cat = malloc(all + 1);
        if (!cat) {
            gf_fail("out of memory");
            return NULL;
        }
        memcpy(cat, text[0], tlen[0]);
        memcpy(cat + tlen[0], text[1], tlen[1]);
        memcpy(cat + tlen[0] + tlen[1], text[2], tlen[2]);
        tok = gf_tokenizer_build(kind, cat, all);
        free(cat);
    } else {
        tok = gf_tokenizer_build(kind, text[0], tlen[0]);
    }
    if (!tok) gf_fail_context(" (building the vocabulary of %s)", spec);
    return tok;
}

/* The raw bytes of every source file into raw (the cache key hashes them with the tokenizer's kind and
 * vocabulary); returns the key, or sets *err. */
static uint64_t read_sources(const corpus_files *f, gf_tok_kind kind, const gf_tokenizer *given, unsigned char **raw,
                             size_t *raw_n, int *err) {
    uint64_t key = gf_hash_bytes(gf_tok_kind_name(kind), strlen(gf_tok_kind_name(kind)), CACHE_VERSION);
    key = gf_hash_bytes(gf_uc_unicode_version, strlen(gf_uc_unicode_version), key);
    if (given) {
        uint64_t vh = gf_vocab_hash(&given->vocab);
        key = gf_hash_bytes(&vh, sizeof vh, key);
        if (given->unk_text[0]) key = gf_hash_bytes(given->unk_text, strlen(given->unk_text), key);
    }
    *err = 0;
    for (int s = 0; s < (f->single ? 1 : 3) && !*err; s++) {
        raw[s] = gf_read_file(f->path[s], gf_corpus_max_text(), &raw_n[s]);
        if (!raw[s]) *err = -1, gf_fail_context("\nHINT: " MAX_TEXT_HINT);
        else key = gf_hash_bytes(raw[s], raw_n[s], key);
    }
    return key;
}

/* Decode, split, build the vocabulary if none is given, tokenize every split, store the cache. */
static int tokenize_corpus(gf_corpus *c, const corpus_files *f, gf_tok_kind kind, const gf_tokenizer *given,
                           unsigned char **raw, const size_t *raw_n, char **text, size_t *tlen, const char *cpath,
                           const char *cache_dir, uint64_t key) {
    for (int s = 0; s < (f->single ? 1 : 3); s++) {
        text[s] = gf_text_from_bytes(f->path[s], raw[s], raw_n[s], gf_corpus_max_text(), MAX_TEXT_HINT, &tlen[s]);
        raw[s] = NULL; /* taken over */
        if (!text[s]) return -1;
    }
    if (f->single && split_single(text, tlen, f->path[0])) return -1;
    gf_tokenizer *tok = (gf_tokenizer *)given;
    if (!tok && !(tok = c->tok = build_vocab(kind, text, tlen, c->name))) return -1;
    for (int s = 0; s < 3; s++) {
        char what[1300];
        snprintf(what, sizeof what, "%.1200s (%s split)", f->single ? f->path[0] : f->path[s], SPLITS[s]);
        c->counts[s] = (gf_text_counts){.first_skipped = -1};
        if (gf_tokenize_counted(tok, text[s], tlen[s], what, &c->split[s], &c->counts[s])) return -1;
        c->lines[s] = count_lines(text[s], tlen[s]);
    }
    if (cpath[0]) {
        if (mkdir_p(cache_dir) == 0 && cache_store(c, tok, cpath, key) == 0)
            snprintf(c->cache_note, sizeof c->cache_note, "tokenized corpus cached in %s", cpath);
        else /* one line: the error's first (its HINT is about the folder; this one is about the cache) */
            snprintf(c->cache_note, sizeof c->cache_note, "warning: could not write the token cache %s: %.*s (the "
                     "corpus is read all the same; GRASSFLOW_CACHE names another folder, empty turns the cache off)",
                     cpath, (int)strcspn(gf_last_error(), "\n"), gf_last_error());
    }
    return 0;
}

/* The corpus owns its tokenizer: the WordPiece one it loaded, or a copy of the fixed one. */
static int adopt_tokenizer(gf_corpus *c, gf_tokenizer **wp, const gf_tokenizer *fixed) {
    if (c->tok) return 0;
    if (*wp) {
        c->tok = *wp;
        *wp = NULL;
    } else if (fixed) { /* through its saved form */
        char *js = gf_tokenizer_to_json(fixed);
        c->tok = js ? gf_tokenizer_from_json(js, fixed->source ? fixed->source : "checkpoint") : NULL;
        free(js);
        if (!c->tok) return -1;
    }
    return 0;
}

gf_corpus *gf_corpus_load(const char *spec, const char *data_dir, const char *tok_spec, const gf_tokenizer *fixed,
                          const char *cache_dir) {
    gf_corpus *c = calloc(1, sizeof *c);
    char *text[3] = {0}, cpath[GF_PATH_MAX] = "";
    size_t tlen[3] = {0}, raw_n[3] = {0};
    unsigned char *raw[3] = {0};
    gf_tokenizer *wp = NULL;
    corpus_files f;
    gf_tok_kind kind = GF_TOK_CHAR;
    int rc = (!c || !(c->name = strdup(spec))) ? gf_fail("out of memory") : 0;
    if (!rc) rc = locate_corpus(spec, data_dir, &f);
    if (!rc) snprintf(c->note, sizeof c->note, "%s", f.note);
    if (!rc) rc = pick_tokenizer(tok_spec ? tok_spec : f.default_tok, fixed, &kind, &wp);
    const gf_tokenizer *given = fixed ? fixed : wp;
    uint64_t key = rc ? 0 : read_sources(&f, kind, given, raw, raw_n, &rc);
    bool cached = false;
    if (!rc && cache_dir && *cache_dir) {
        char name[32];
        snprintf(name, sizeof name, "%016llx.gftok", (unsigned long long)key);
        if (gf_path_join(cpath, sizeof cpath, cache_dir, name)) /* too long: no cache, never another file */
            snprintf(c->cache_note, sizeof c->cache_note, "warning: token cache not used: %s", gf_last_error());
        cached = cpath[0] && is_file(cpath) && gf_corpus_cache_load(c, cpath, key, given) == 0;
        if (cached) snprintf(c->cache_note, sizeof c->cache_note, "tokenized corpus from cache %s", cpath);
    }
    if (!rc && !cached) rc = tokenize_corpus(c, &f, kind, given, raw, raw_n, text, tlen, cpath, cache_dir, key);
    if (!rc) rc = adopt_tokenizer(c, &wp, fixed);
    for (int s = 0; s < 3; s++) free(text[s]), free(raw[s]);
    gf_tokenizer_free(wp);
    if (rc) {
        gf_corpus_free(c);
        return NULL;
    }
    return c;
}
