/* Natural-language inference data (SNLI): premise/hypothesis pairs with a gold label, read as the user
 * has them after unpacking snli_1.0.zip (the jsonl files, the 14-column snli_1.0_*.txt files), as Hugging
 * Face's snli has them (jsonl of label, premise, hypothesis), in a TSV or CSV (RFC 4180) with a header row
 * naming its columns, or in the compact TSV (label, premise, hypothesis) that grassflow ships, each plain or
 * .xz. Files are
 * streamed line by line: memory is what the kept sentences take, never the whole file. */
#ifndef GF_DATA_NLI_READER_H
#define GF_DATA_NLI_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

enum { GF_NLI_ENTAILMENT = 0, GF_NLI_NEUTRAL = 1, GF_NLI_CONTRADICTION = 2, GF_NLI_CLASSES = 3 };

typedef struct gf_nli_split {
    int64_t n;                 /* pairs kept */
    char *text;                /* every kept pair's premise and hypothesis, each NUL-terminated */
    int64_t *premise;          /* (n) offset of pair i's premise in text; its hypothesis follows it */
    int8_t *label;             /* (n) GF_NLI_* */
    int64_t rows;              /* data rows read (a header row is not one) */
    int64_t per_label[GF_NLI_CLASSES];
    int64_t unlabelled;        /* gold label "-" (no annotator consensus): dropped, as is usual (all: kept, -1) */
    int64_t empty;             /* an empty premise or hypothesis (or one of whitespace alone): dropped (all: kept) */
    bool all;                  /* a file of pairs read whole (gf_nli_read_pairs): every row kept */
    const char *format;        /* "jsonl", "txt" (the official 14 columns, named by a header row), "tsv-header"
                                * (other columns a header row names) or "tsv" (label, premise, hypothesis; all:
                                * also premise, hypothesis), "csv-header" or "csv" (the same, comma-separated);
                                * "memory": gf_nli_split_init */
    char path[GF_PATH_MAX];
    int64_t text_len, text_cap, cap;
    int64_t max_bytes;         /* what the kept pairs may take: gf_corpus_max_text() when the file was opened */
    int64_t max_pairs;         /* > 0: reading stops once this many pairs are kept (the file's first ones) */
    bool tsv_named;            /* named *.tsv (or .tsv.xz): tab-separated, never sniffed as jsonl */
    bool csv;                  /* comma-separated (RFC 4180): named *.csv (or .csv.xz), or a first line that is
                                * a comma-separated header row (format "csv" or "csv-header") */
} gf_nli_split;

typedef struct gf_nli_data {
    char name[64];
    gf_nli_split split[3];     /* GF_TRAIN, GF_VALID (SNLI's dev), GF_TEST */
} gf_nli_data;

/* One file into *out (zeroed first; gf_nli_split_free releases it). Errors name the file and line: a
 * malformed JSON line (in a *.jsonl, any line that is not a JSON object), a record or header that could be
 * read two ways (gold_label and label, sentence1 and premise, a key twice, two columns for one field), an
 * unknown label, a row with the wrong number of columns, invalid UTF-8, a NUL
 * (a byte, or \u0000 in JSON), pairs past gf_corpus_max_text() bytes (GRASSFLOW_MAX_TEXT). A UTF-8 byte
 * order mark and blank lines are skipped. A sentence with no word for the BERT tokenizer (nothing but
 * Unicode whitespace, control and format characters, accents) is empty: its pair is dropped, counted. */
int gf_nli_read(const char *path, gf_nli_split *out);
/* A file of pairs as eval and predict read it (--corpus FILE): every row kept, in file order, so that pair i
 * is the file's i-th record; a pair without a label ("-", an empty label, no label column or key, JSON null
 * or -1) has label -1, and one with an empty sentence is kept as it is. The same forms, and a headerless TSV
 * may also be premise, hypothesis; a header row may leave out the label column. A file without a pair is
 * an error. */
int gf_nli_read_pairs(const char *path, gf_nli_split *out);
/* An empty split of pairs given in memory (what), each added by gf_nli_split_add (label -1: none), read as
 * gf_nli_read_pairs keeps them; -1 (gf_last_error) when out of memory or past gf_corpus_max_text(). */
void gf_nli_split_init(gf_nli_split *s, const char *what);
int gf_nli_split_add(gf_nli_split *s, const char *premise, const char *hypothesis, int label);
void gf_nli_split_free(gf_nli_split *s);
/* spec: "snli" (data_dir/snli) or a directory holding snli_1.0_{train,dev,test}.{jsonl,txt,tsv}[.xz] (one
 * file a split: two forms of one split, snli_1.0_dev.jsonl and snli_1.0_dev.txt, are an error naming both); the
 * training split falls back to snli_1.0_train_0.01.* (the 1% sample grassflow ships) when the full
 * snli_1.0_train.* is not there. A split that is missing is an error naming the files looked for; one
 * whose name is taken by something else (a directory, a FIFO, a link loop) an error saying what it is. */
gf_nli_data *gf_nli_load(const char *spec, const char *data_dir);
/* The same for the splits of the mask only (bit 1 << GF_TRAIN, GF_VALID, GF_TEST); the others are not
 * looked at and stay empty (n 0, format NULL). spec a file of pairs (gf_nli_file): it is each split asked
 * for (gf_nli_read_pairs), but never the training split (an error: a file is scored, not trained on). */
gf_nli_data *gf_nli_load_splits(const char *spec, const char *data_dir, unsigned splits);
/* The same, each split only up to its first max_pairs kept pairs (0: all): reading stops there, so that
 * predict --limit N reads N pairs of a file, not the whole of it. */
gf_nli_data *gf_nli_load_first(const char *spec, const char *data_dir, unsigned splits, int64_t max_pairs);
void gf_nli_free(gf_nli_data *d);
/* Whether spec names NLI data: 1 for "snli", or a directory with any snli_1.0_{train,train_0.01,dev,test}.*
 * (whatever it is: reading it says what is wrong); 2 for a file of pairs (gf_nli_file); else 0. */
int gf_nli_is_spec(const char *spec, const char *data_dir);
/* Whether path is a file of pairs: named *.jsonl, *.tsv, *.csv (or .xz) and anything but a directory, or
 * nothing at all (reading it says what it is), or a regular file whose first line that is not blank is a
 * JSON object with sentence1 or premise, a header row (tab- or comma-separated) naming gold_label, sentence1,
 * premise or sentence2, or label TAB premise TAB hypothesis with a known label. */
bool gf_nli_file(const char *path);
/* Whether spec is read as one file of pairs (gf_nli_load_splits): not "snli", and a file of pairs
 * (gf_nli_file) or any other regular file, whose reading says whether it holds pairs in a form there is. */
bool gf_nli_whole_file(const char *spec);
const char *gf_nli_label_name(int label);
static inline const char *gf_nli_premise(const gf_nli_split *s, int64_t i) { return s->text + s->premise[i]; }
const char *gf_nli_hypothesis(const gf_nli_split *s, int64_t i);

#endif
