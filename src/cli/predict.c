/* grassflow predict: a classifier's label and class probabilities for each example of its task's data (a
 * file of sentence pairs, or one split of a folder), one line each, or as JSON lines with the pieces the
 * model read. The predictions are the library's (gf_predict); this file parses flags and prints. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

static void help(void) {
    printf("usage: grassflow predict --ckpt FILE --corpus C [--split valid|test|train] [--json] [--limit N]\n"
           "                         [--batch B] [--task T] [task options]\n"
           "       grassflow predict --ckpt ENCODER_DECODER --corpus WORDS [--beam K] [--length-penalty A]\n"
           "                         [--max-len N] [--json] [--limit N] [--align-dir DIR [--force]]\n"
           "                         [--ensemble A,B]\n\n"
           "A classifier's prediction for each example of its task's data, in order: for snli, each pair of a\n"
           "file of pairs (jsonl, TSV or CSV, plain or .xz; pairs without a label too: README, \"Score your own\n"
           "pairs\") or of one split of a folder. A line per example, after a header row:\n"
           "  index  label  P(class) for each class (the task's names)  gold (- when the example has none)\n"
           "index counts the file's pairs from 0 (a file is read whole: no row is dropped). The examples are\n"
           "batched as eval batches them, so the lines whose label is their gold give eval's accuracy.\n\n"
           "  --ckpt FILE     a classifier from grassflow train (it carries its tokenizer and recipe)\n"
           "  --corpus C      a file of pairs, or the task's data as for eval\n"
           "  --split S       for a folder: valid (default; dev is the same split), test or train; a file\n"
           "                  is scored whole and --split is refused\n"
           "  --json          one JSON object per line: {\"index\", \"label\", \"probs\": {CLASS: p, ...},\n"
           "                  \"gold\" (null when none), \"premise_pieces\", \"hypothesis_pieces\"} (the\n"
           "                  tokenizer's pieces of each sentence as the model read them, after --max-sent's cut)\n"
           "  --limit N       the first N examples only (only they are read: a file's other pairs are not)\n"
           "  --batch B       examples per forward pass (default 16, as eval)\n"
           "  --task T        default: the task the checkpoint was trained for\n"
           "An encoder-decoder (task g2p) decodes each line of WORDS (a word) into its target, one line each:\n"
           "  input<TAB>output (the phonemes, space-separated)<TAB>score (--json: {\"index\", \"input\",\n"
           "  \"output\", \"score\"}); a line it cannot read is an error naming the file and line.\n"
           "  --beam K        hypotheses kept each step (default 1: greedy)\n"
           "  --length-penalty A  GNMT's alpha: scores divided by ((5 + tokens) / 6)^A (default 0)\n"
           "  --max-len N     target tokens at most (default: the model's max_len with learned positions, else 256)\n"
           "  --ensemble A,B  decode with these encoder-decoders and --ckpt's as one: each token's probability the\n"
           "                  mean of theirs (the same task and target vocabulary; not with --align-dir)\n"
           "  --align-dir DIR draw each word's attention over the source (each decoder layer, the heads' mean) into\n"
           "                  DIR/align-NNNN.svg (NNNN: its index; DIR made if missing); replaces SVG files,\n"
           "                  another file only with --force\n"
           "  --tokenizer T   only for checkpoints without a stored tokenizer (e.g. from init)\n"
           "  the task's options (default: the training run's):\n");
    cli_task_help();
}

int cmd_predict(int argc, char **argv) {
    eval_args a = {.cmd = "predict", .split = "valid", .B = 16, .dec = gf_decode_opts_default()};
    a.dec.max_len = 0; /* the model's */
    int rc = cli_eval_parse(argc, argv, &a, help);
    return rc ? (rc < 0 ? EXIT_OK : rc) : cli_eval_run(&a);
}

typedef struct {
    const gf_tokenizer *tok;
    const gf_task_ops *t;
    const void *data;
    const eval_args *a;
    int32_t special[3]; /* [CLS], [SEP], [PAD]: the layout, not pieces of a sentence */
    bool out_of_memory; /* a JSON line could not be made */
} printer;

/* The task's name of class c ("class C" past the names it has). */
static const char *class_name(const printer *p, int64_t c, char buf[32]) {
    const char *name = p->t->label ? p->t->label(p->data, c) : NULL;
    if (name) return name;
    snprintf(buf, 32, "class %lld", (long long)c);
    return buf;
}

/* class_name as a TSV field (a name from the data holding a tab would add a column) into field. */
static const char *class_field(const printer *p, int64_t c, char field[GF_ESCAPE_CAP(256)]) {
    char buf[32];
    gf_escape_tsv(field, GF_ESCAPE_CAP(256), class_name(p, c, buf));
    return field;
}

/* The pieces of token type seg (all of them when the source gives no types), the layout's tokens left out. */
static cJSON *pieces(const printer *p, const gf_prediction *e, int seg) {
    cJSON *arr = cJSON_CreateArray();
    for (int64_t k = 0; k < e->n_ids && p->tok; k++) {
        const int32_t id = e->ids[k];
        if ((e->segments && e->segments[k] != seg) || id == p->special[0] || id == p->special[1] || id == p->special[2])
            continue;
        char *piece = cli_piece(p->tok, id);
        cJSON_AddItemToArray(arr, cJSON_CreateString(piece ? piece : "?"));
        free(piece);
    }
    return arr;
}

static int print_json(const printer *p, const gf_prediction *e) {
    char buf[32];
    cJSON *o = cJSON_CreateObject(), *pr = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", (double)e->index);
    cJSON_AddStringToObject(o, "label", class_name(p, e->label, buf));
    for (int64_t c = 0; c < e->n_classes; c++) cJSON_AddNumberToObject(pr, class_name(p, c, buf), e->probs[c]);
    cJSON_AddItemToObject(o, "probs", pr);
    if (e->gold >= 0) cJSON_AddStringToObject(o, "gold", class_name(p, e->gold, buf));
    else cJSON_AddNullToObject(o, "gold");
    if (e->ids) {
        cJSON_AddItemToObject(o, e->segments ? "premise_pieces" : "pieces", pieces(p, e, 0));
        if (e->segments) cJSON_AddItemToObject(o, "hypothesis_pieces", pieces(p, e, 1));
    }
    char *s = gf_json_utf8(cJSON_PrintUnformatted(o)); /* a piece or a class name that is not UTF-8: U+FFFD */
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    return s ? 0 : -1;
}

/* One example's line; 1 after --limit's last, or when standard output failed (a closed pipe, looked at every
 * 256 lines), or out of memory: stop. */
static int print_one(const gf_prediction *e, void *ctx) {
    printer *p = ctx;
    char buf[GF_ESCAPE_CAP(256)];
    if (p->a->json) {
        if (print_json(p, e)) return p->out_of_memory = true;
    } else {
        printf("%lld\t%s", (long long)e->index, class_field(p, e->label, buf));
        for (int64_t c = 0; c < e->n_classes; c++) printf("\t%.6f", e->probs[c]);
        printf("\t%s\n", e->gold >= 0 ? class_field(p, e->gold, buf) : "-");
    }
    return (p->a->limit && e->index + 1 >= p->a->limit) || (e->index % 256 == 255 && cli_stdout_failed());
}

int cli_predict_print(gf_model *m, const gf_tokenizer *tok, const gf_task_ops *t, const void *data, gf_source *src,
                      const eval_args *a) {
    printer p = {.tok = tok, .t = t, .data = data, .a = a, .special = {-1, -1, -1}};
    static const char *const layout[3] = {"[CLS]", "[SEP]", "[PAD]"};
    for (int k = 0; k < 3 && tok; k++) p.special[k] = gf_tokenizer_find(tok, layout[k], 5);
    if (!a->json) {
        char buf[GF_ESCAPE_CAP(256)];
        printf("index\tlabel");
        for (int64_t c = 0; c < gf_model_n_outputs(m); c++) printf("\t%s", class_field(&p, c, buf));
        printf("\tgold\n");
    }
    if (gf_predict(m, src, a->B, print_one, &p)) return cli_error("%s", gf_last_error());
    return p.out_of_memory ? cli_error("out of memory printing a prediction as JSON") : EXIT_OK;
}
