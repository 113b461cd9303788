/* Natural-language inference data (SNLI): premise/hypothesis pairs with a gold label, read as the user
 * has them after unpacking snli_1.0.zip (the jsonl files, the 14-column snli_1.0_*.txt files) or in the
 * compact TSV (label, premise, hypothesis) that grassflow ships, each plain or .xz. Files are streamed
 * line by line: memory is what the kept sentences take, never the whole file. */
#ifndef GF_DATA_NLI_READER_H
#define GF_DATA_NLI_READER_H

#include <stdint.h>

#include "grassflow.h"

enum { GF_NLI_ENTAILMENT = 0, GF_NLI_NEUTRAL = 1, GF_NLI_CONTRADICTION = 2, GF_NLI_CLASSES = 3 };

typedef struct gf_nli_split {
    int64_t n;                 /* pairs kept */
    char *text;                /* every kept pair's premise and hypothesis, each NUL-terminated */
    int64_t *premise;          /* (n) offset of pair i's premise in text; its hypothesis follows it */
    int8_t *label;             /* (n) GF_NLI_* */
    int64_t rows;              /* data rows read (a header row is not one) */
    int64_t per_label[GF_NLI_CLASSES];
    int64_t unlabelled;        /* gold label "-" (no annotator consensus): dropped, as is usual */
    int64_t empty;             /* an empty premise or hypothesis (or one of whitespace alone): dropped */
    const char *format;        /* "jsonl", "txt" (the official 14 columns) or "tsv" (label, premise, hypothesis) */
    char path[GF_PATH_MAX];
    int64_t text_len, text_cap, cap;
    int64_t max_bytes;         /* what the kept pairs may take: gf_corpus_max_text() when the file was opened */
} gf_nli_split;

typedef struct gf_nli_data {
    char name[64];
    gf_nli_split split[3];     /* GF_TRAIN, GF_VALID (SNLI's dev), GF_TEST */
} gf_nli_data;

/* One file into *out (zeroed first; gf_nli_split_free releases it). Errors name the file and line: a
 * malformed JSON line, an unknown label, a row with the wrong number of columns, invalid UTF-8, a NUL
 * (a byte, or \u0000 in JSON), pairs past gf_corpus_max_text() bytes (GRASSFLOW_MAX_TEXT). A UTF-8 byte
 * order mark and blank lines are skipped. A sentence with no word for the BERT tokenizer (nothing but
 * Unicode whitespace, control and format characters, accents) is empty: its pair is dropped, counted. */
int gf_nli_read(const char *path, gf_nli_split *out);
void gf_nli_split_free(gf_nli_split *s);
/* spec: "snli" (data_dir/snli) or a directory holding snli_1.0_{train,dev,test}.{jsonl,txt,tsv}[.xz]; the
 * training split falls back to snli_1.0_train_0.01.* (the 1% sample grassflow ships) when the full
 * snli_1.0_train.* is not there. A split that is missing is an error naming the files looked for; one
 * whose name is taken by something else (a directory, a FIFO, a link loop) an error saying what it is. */
gf_nli_data *gf_nli_load(const char *spec, const char *data_dir);
/* The same for the splits of the mask only (bit 1 << GF_TRAIN, GF_VALID, GF_TEST); the others are not
 * looked at and stay empty (n 0, format NULL). */
gf_nli_data *gf_nli_load_splits(const char *spec, const char *data_dir, unsigned splits);
void gf_nli_free(gf_nli_data *d);
/* Whether spec names NLI data: "snli", or a directory with any snli_1.0_{train,train_0.01,dev,test}.*
 * (whatever it is: reading it says what is wrong). */
int gf_nli_is_spec(const char *spec, const char *data_dir);
const char *gf_nli_label_name(int label);
static inline const char *gf_nli_premise(const gf_nli_split *s, int64_t i) { return s->text + s->premise[i]; }
const char *gf_nli_hypothesis(const gf_nli_split *s, int64_t i);

#endif
