/* grassflow features: a model's last hidden states for a text or a sentence pair (what a head on a
 * backbone reads), as text or JSON. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: grassflow features --ckpt FILE --text TEXT [--hypothesis TEXT] [--max-sent N] [--pieces] [--json]\n\n"
           "The last hidden states of a checkpoint's model (its last stack's output, before the final\n"
           "LayerNorm) for one text ([CLS] TEXT [SEP] with a BERT WordPiece tokenizer, else its tokens), or\n"
           "for a sentence pair read as BERT reads it: [CLS] TEXT [SEP] HYPOTHESIS [SEP] with token types 0\n"
           "then 1 (the checkpoint's tokenizer must be a BERT WordPiece one).\n\n"
           "  --ckpt FILE        a checkpoint that carries its tokenizer (grassflow train), or a Hugging Face\n"
           "                     DistilBERT folder (config.json, model.safetensors, vocab.txt)\n"
           "  --text TEXT        the text, or the premise of a pair\n"
           "  --hypothesis TEXT  make it a pair\n"
           "  --max-sent N       a pair: WordPiece pieces kept per sentence (default 48)\n"
           "  --pieces           show each token's piece beside its id (the tokenizer's string: WordPiece\n"
           "                     \"##ing\", [CLS]; a byte or character as it is), JSON-quoted in the text\n"
           "                     output; with --json, a \"pieces\" list beside \"ids\"\n"
           "  --json             print {\"ids\": [...], \"hidden\": [[...], ...]} (one row per token)\n");
}

/* The ids (and token types) of the input. */
static int encode(const gf_tokenizer *tok, const char *text, const char *hyp, int64_t max_sent, int32_t **ids,
                  uint8_t **seg, int64_t *n) {
    if (hyp) return gf_nli_encode_pair(tok, text, hyp, max_sent, ids, seg, n) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    *seg = NULL;
    return gf_encode_single(tok, text, strlen(text), "--text", ids, n) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

/* The piece of id as a JSON string (malloc'd; "?" outside the vocabulary). */
static char *piece_json(const gf_tokenizer *tok, int32_t id) {
    char *raw = cli_piece(tok, id);
    cJSON *str = cJSON_CreateString(raw ? raw : "?");
    char *out = str ? cJSON_PrintUnformatted(str) : NULL;
    free(raw);
    cJSON_Delete(str);
    return out;
}

static void print_text(const gf_tokenizer *tok, const int32_t *ids, const float *hid, int64_t T, int64_t d, int pieces) {
    printf("tokens %lld, width %lld\n", (long long)T, (long long)d);
    for (int64_t t = 0; t < T && !ferror(stdout); t++) { /* stop at a failed write (main reports it) */
        printf("%6d", ids[t]);
        if (pieces) {
            char *p = piece_json(tok, ids[t]), cell[GF_ESCAPE_CAP(64) + 14];
            cli_escape_cut(cell, sizeof cell, p ? p : "?", 14); /* a byte piece that is not UTF-8 as \xNN */
            printf(" %s", cell);
            free(p);
        }
        for (int64_t k = 0; k < d; k++) printf(" %.6g", (double)hid[t * d + k]);
        printf("\n");
    }
}

/* EXIT_OK, or EXIT_RUNTIME when the JSON could not be made (out of memory). */
static int print(const gf_tokenizer *tok, const int32_t *ids, const float *hid, int64_t T, int64_t d, int json,
                 int pieces) {
    if (!json) {
        print_text(tok, ids, hid, T, d, pieces);
        return EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject(), *ia = cJSON_AddArrayToObject(o, "ids");
    cJSON *pa = pieces ? cJSON_AddArrayToObject(o, "pieces") : NULL, *ha = cJSON_AddArrayToObject(o, "hidden");
    for (int64_t t = 0; t < T; t++) {
        cJSON_AddItemToArray(ia, cJSON_CreateNumber(ids[t]));
        if (pa) {
            char *p = cli_piece(tok, ids[t]);
            cJSON_AddItemToArray(pa, cJSON_CreateString(p ? p : "?"));
            free(p);
        }
        cJSON *row = cJSON_CreateArray();
        for (int64_t k = 0; k < d; k++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)hid[t * d + k]));
        cJSON_AddItemToArray(ha, row);
    }
    char *s = gf_json_utf8(cJSON_PrintUnformatted(o)); /* not finite: null; a piece that is not UTF-8 (a byte's): U+FFFD */
    const bool made = s != NULL;
    if (made) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    return made ? EXIT_OK : cli_error("out of memory printing the hidden states as JSON");
}

int cmd_features(int argc, char **argv) {
    static const struct option longopts[] = {{"ckpt", 1, 0, 'c'}, {"text", 1, 0, 't'}, {"hypothesis", 1, 0, 'y'},
                                             {"max-sent", 1, 0, 'M'}, {"json", 0, 0, 'j'}, {"pieces", 0, 0, 'p'},
                                             {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
    const char *ckpt = NULL, *text = NULL, *hyp = NULL;
    int64_t max_sent = 48;
    int json = 0, pieces = 0, opt, rc, max_sent_given = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'c') ckpt = optarg;
        else if (opt == 't') text = optarg;
        else if (opt == 'y') hyp = optarg;
        else if (opt == 'M') {
            if ((rc = cli_parse_i64("features", "--max-sent", optarg, 1, 4096, &max_sent))) return rc;
            max_sent_given = 1;
        }
        else if (opt == 'j') json = 1;
        else if (opt == 'p') pieces = 1;
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("features", "unknown option");
    }
    if (optind < argc) return cli_usage_error("features", "unexpected argument '%s'", argv[optind]);
    if (!ckpt || !text) return cli_usage_error("features", "--ckpt FILE and --text TEXT are required");
    if (max_sent_given && !hyp)
        return cli_usage_error("features", "--max-sent does not apply to one --text: it cuts each sentence of a pair "
                               "(--text with --hypothesis)\nHINT: drop --max-sent, or give --hypothesis");
    gf_tokenizer *tok = NULL;
    gf_model *m = gf_import_load(ckpt, &tok);
    if (!m) return cli_error("%s", gf_last_error());
    int32_t *ids = NULL;
    uint8_t *seg = NULL;
    int64_t n = 0, B, T, d;
    if (!tok) rc = cli_error("%s carries no tokenizer (a checkpoint from grassflow init?); features reads text", ckpt);
    else if (gf_model_config(m)->source_vocab > 0)
        rc = cli_error("%s is an encoder-decoder (its decoder reads a source besides its own tokens); features reads "
                       "one text through a model's one stack\nHINT: grassflow inspect --ckpt %s --text WORD shows what "
                       "its encoder and decoder do with a word", ckpt, ckpt);
    else if (hyp && gf_tokenizer_find(tok, "[CLS]", 5) < 0)
        rc = cli_error("--hypothesis: %s reads text with a %s tokenizer, with no [CLS]; a pair is read as BERT reads it, "
                       "[CLS] premise [SEP] hypothesis [SEP]\nHINT: a model on a BERT WordPiece vocabulary, or drop "
                       "--hypothesis", ckpt, gf_tok_kind_name(gf_tokenizer_kind(tok)));
    else rc = encode(tok, text, hyp, max_sent, &ids, &seg, &n);
    if (!rc) {
        gf_batch b = {.B = 1, .T = n, .ids = ids, .segments = seg};
        const float *hid = gf_model_forward_batch(m, &b, NULL) ? NULL : gf_model_hidden(m, &B, &T, &d);
        rc = hid ? print(tok, ids, hid, T, d, json, pieces) : cli_error("%s", gf_last_error());
    }
    free(ids);
    free(seg);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
