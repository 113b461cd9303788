/* grassflow eval: a checkpoint scored on one split of its task's data: perplexity, or a classifier's report. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "eval.h"
#include "eval_classify.h"

static void help(void) {
    printf("usage: grassflow eval --ckpt FILE --corpus C [--split valid|test|train] [--batch B] [--tokenizer T]\n"
           "                      [--stream] [--weights W] [--json] [--task T] [task options]\n\n"
           "A task scored by perplexity: the token-weighted mean next-token loss and perplexity of a\n"
           "checkpoint on a whole split, in blocks of L + 1 tokens with stride L, so every token but the first is\n"
           "predicted once (--json: {\"split\", \"tokens\", \"loss\", \"ppl\", \"words\", ...}). Beside it, what the text\n"
           "held (docs/model.md): a word or WordPiece model's out-of-vocabulary rate (\"oov_tokens\", \"oov_rate\");\n"
           "a char model's characters it never saw, skipped and left out of the perplexity (\"skipped_chars\",\n"
           "\"skipped_rate\"); a subword model's perplexity per word (\"word_ppl\": the total loss over the\n"
           "split's words, as the word tokenizer counts them: the per-token ppl raised to \"tokens_per_word\", so\n"
           "a char model's is in the millions until it has learned; the text shows a uniform guess beside it).\n"
           "A task scored by accuracy:\n"
           "accuracy, per-class precision and recall, the confusion matrix and the mean loss (--json: {\"split\"\n"
           "(null for one file), \"pairs\", \"seconds\", \"pairs_per_s\", \"accuracy\", \"loss\", \"per_class\",\n"
           "\"confusion\"}; the count is named as the task counts, and seconds time the forward passes alone, at\n"
           "--batch). A number that is not finite prints as null.\n\n"
           "  --ckpt FILE     a checkpoint from grassflow train (it carries its tokenizer and recipe)\n"
           "  --corpus C      the task's data, as for train; or one file of examples (snli: a file of pairs,\n"
           "                  jsonl, TSV or CSV), scored whole: the examples without a label are not counted\n"
           "                  (grassflow predict shows each example's label)\n"
           "  --split S       valid (default; dev is the same split), test or train; not for one file\n"
           "  --task T        default: the task the checkpoint was trained for; for one without a training\n"
           "                  recipe, the first task scored by accuracy if it is a classifier, else lm\n"
           "  --batch B       examples per forward pass (default 16)\n"
           "  --tokenizer T   only for checkpoints without a stored tokenizer (e.g. from init)\n"
           "  --stream        score with the streaming engine, one token at a time (reset at each block);\n"
           "                  the same numbers as the batched default, at any L for pos none/sinusoidal\n"
           "  --weights W     the weight matrices as fp32 (default), bf16 or int8 (as generate --weights):\n"
           "                  with --stream, scored as generation runs them (int8 on VNNI or AVX2)\n"
           "  --json          print the result as one JSON object\n"
           "  --beam K        an encoder-decoder's test: decode by beam search of K hypotheses (default 1:\n"
           "                  greedy), --length-penalty A with GNMT's penalty ((5 + n) / 6)^A (default 0)\n"
           "  --ensemble A,B  an encoder-decoder's split decoded by --ckpt's model and these as one: each token's\n"
           "                  probability the mean of theirs (the same task and target vocabulary; the loss and\n"
           "                  ppl stay --ckpt's alone: --json says \"loss_of\": \"--ckpt\"; an error names model\n"
           "                  k from 0, --ckpt's)\n"
           "  the task's options (default: the training run's; for lm without one, --seq-len max_len):\n");
    cli_task_help();
}

/* gf_evaluate's examples (the token-block source: blocks of L + 1 tokens, stride L), each scored by the streaming
 * engine one token at a time from a fresh state. */
static int eval_stream(const gf_model *m, gf_source *src, double *mean_loss, int64_t *n_predicted) {
    if (src->check && src->check(src->ctx, m, GF_USE_EVAL)) return -1;
    const int64_t n = gf_source_n_eval(src);
    gf_stream *s = gf_stream_create(m);
    if (!s) return -1;
    double total = 0.0;
    int64_t counted = 0;
    int rc = 0;
    for (int64_t k = 0; k < n && !rc; k++) {
        gf_batch bt;
        rc = gf_source_fill_eval(src, k, 1, &bt);
        for (int64_t b = 0; b < bt.B && !rc; b++)
            rc = gf_stream_score(s, bt.ids + b * bt.T, bt.targets + b * bt.T, bt.T, &total, &counted);
    }
    gf_stream_free(s);
    if (rc) return -1;
    *mean_loss = total / (double)counted;
    *n_predicted = counted;
    return 0;
}

/* --split into a->si (GF_TRAIN, GF_VALID, GF_TEST): EXIT_OK or a usage error naming the command. */
static int eval_split(eval_args *a) {
    static const char *const splits[] = {"train", "valid", "test", "dev"};
    a->si = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(a->split, splits[i])) a->si = i == 3 ? GF_VALID : i;
    if (a->si < 0) return cli_usage_error(a->cmd, "--split must be train, valid (or dev) or test, not '%s'", a->split);
    return EXIT_OK;
}

int cli_eval_parse(int argc, char **argv, eval_args *a, void (*help)(void)) {
    const bool eval = !strcmp(a->cmd, "eval"); /* eval's --no-cache and --stream, predict's --limit */
    static const struct option shared[] = {{"ckpt", 1, 0, 'c'}, {"corpus", 1, 0, 'C'}, {"split", 1, 0, 's'},
                                           {"batch", 1, 0, 'b'}, {"tokenizer", 1, 0, 't'}, {"json", 0, 0, 'j'},
                                           {"task", 1, 0, 'T'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    static const struct option eval_only[] = {{"no-cache", 0, 0, 'n'}, {"stream", 0, 0, 'S'}, {"weights", 1, 0, 'W'},
                                              {"beam", 1, 0, 'B'}, {"length-penalty", 1, 0, 'P'},
                                              {"ensemble", 1, 0, 'E'}, {0, 0, 0, 0}};
    static const struct option predict_only[] = {{"limit", 1, 0, 'l'}, {"beam", 1, 0, 'B'}, {"length-penalty", 1, 0, 'P'},
                                                 {"max-len", 1, 0, 'M'}, {"align-dir", 1, 0, 'A'},
                                                 {"force", 0, 0, 'F'}, {"ensemble", 1, 0, 'E'}, {0, 0, 0, 0}};
    struct option longopts[64];
    int n = 0;
    for (const struct option *o = shared; o->name; o++) longopts[n++] = *o;
    for (const struct option *o = a->extra_opts ? a->extra_opts : eval ? eval_only : predict_only; o->name; o++)
        longopts[n++] = *o;
    cli_task_longopts(longopts, &n, 64);
    int opt, rc, idx = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        cli_given_note(&a->given, longopts, idx);
        idx = -1;
        if (cli_task_note(&a->targs, longopts, opt, optarg)) continue;
        if (a->extra && (rc = a->extra(a, opt, optarg)) >= 0) {
            if (rc) return rc;
            continue;
        }
        switch (opt) {
        case 'c': a->ckpt = optarg; break;
        case 'C': a->corpus = optarg; break;
        case 's': a->split = optarg; break;
        case 'b': if ((rc = cli_parse_i64(a->cmd, "--batch", optarg, 1, 1 << 20, &a->B))) return rc; break;
        case 't': a->tok_spec = optarg; break;
        case 'j': a->json = 1; break;
        case 'n': a->no_cache = 1; break;
        case 'S': a->stream = 1; break;
        case 'W': if ((rc = cli_weights_option(a->cmd, optarg, &a->weights))) return rc; a->weights_given = 1; break;
        case 'l': if ((rc = cli_parse_i64(a->cmd, "--limit", optarg, 1, INT64_MAX, &a->limit))) return rc; break;
        case 'T': a->task = optarg; break;
        case 'B': if ((rc = cli_parse_i64(a->cmd, "--beam", optarg, 1, GF_DECODE_MAX_BEAM, &a->dec.beam))) return rc; break;
        case 'P': if ((rc = cli_parse_f(a->cmd, "--length-penalty", optarg, 0, 100, &a->dec.length_penalty))) return rc; break;
        case 'M': if ((rc = cli_parse_i64(a->cmd, "--max-len", optarg, 1, 1 << 20, &a->dec.max_len))) return rc; break;
        case 'A': a->align_dir = optarg; break;
        case 'F': a->force = 1; break;
        case 'E': a->ensemble = optarg; break;
        case 'h': help(); return -1;
        default: return cli_usage_error(a->cmd, "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error(a->cmd, "unexpected argument '%s'", argv[optind]);
    if (!a->extra && (!a->ckpt || !a->corpus)) return cli_usage_error(a->cmd, "--ckpt FILE and --corpus C are required");
    if (a->dec.length_penalty > 0 && a->dec.beam < 2)
        return cli_usage_error(a->cmd, "--length-penalty %g without --beam: greedy decoding (beam 1) stops at the first "
                               "end token and has no lengths to weigh\nHINT: --beam K (K >= 2) for a beam search the "
                               "penalty weighs, or drop --length-penalty", a->dec.length_penalty);
    return eval_split(a);
}


/* The first registered task of labels (a classifier's), or of none (a language model's). */
static const char *first_task(bool labels) {
    for (int i = 0; i < gf_task_count(); i++)
        if ((gf_task_at(i)->label != NULL) == labels) return gf_task_at(i)->name;
    return gf_task_at(0)->name;
}

/* The task to score m with, into *t: --task, else the one its training run recorded (with the run's options),
 * else what the model is (a classifier: the first task with labels; otherwise the first without). *by: how
 * it was chosen. Then the option flags and the data flags. */
static int pick_task(const gf_model *m, const eval_args *a, const char *rj, gf_task_recipe *t, char *by, size_t n) {
    gf_task_recipe saved;
    const bool have = rj && gf_task_recipe_from_json(rj, a->ckpt, &saved) == 0;
    const char *name = a->task ? a->task : have ? saved.task->name
                                               : first_task(!gf_model_predicts_next_token(m));
    by[0] = '\0';
    if (a->task) {
    } else if (have) snprintf(by, n, "the task %.3000s was trained for", a->ckpt);
    else if (!gf_model_predicts_next_token(m)) snprintf(by, n, "%.3000s is a classifier", a->ckpt);
    else snprintf(by, n, "the default");
    if (gf_task_recipe_init(t, name)) return cli_usage_error(a->cmd, "--task %s", gf_last_error());
    if (have && saved.task == t->task) memcpy(&t->options, &saved.options, sizeof t->options); /* the run's */
    else if (t->task->eval_defaults) t->task->eval_defaults(t->options.bytes, gf_model_config(m));
    int rc = a->corpus ? cli_copy_arg(a->cmd, "--corpus", a->corpus, t->corpus, sizeof t->corpus) : EXIT_OK;
    if (!rc && a->tok_spec) rc = cli_copy_arg(a->cmd, "--tokenizer", a->tok_spec, t->tokenizer, sizeof t->tokenizer);
    if (!rc) rc = cli_task_apply(t, &a->targs, by[0] ? by : NULL, a->cmd);
    if (!rc) rc = cli_task_flags(t->task, by[0] ? by : NULL, a->cmd, &a->given);
    return rc;
}

int cli_checkpoint_task(const gf_model *m, const eval_args *a, const char *rj, gf_task_recipe *t) {
    char by[4096];
    return pick_task(m, a, rj, t, by, sizeof by);
}

/* Whether a task knows corpus, by its name or what it holds. */
static bool owned(const char *corpus) {
    for (int i = 0; i < gf_task_count(); i++)
        if (gf_task_at(i)->owns && gf_task_at(i)->owns(corpus, cli_data_dir())) return true;
    return false;
}

/* Whether corpus is a regular file that no task owns. */
static bool unclaimed_file(const char *corpus) {
    struct stat st;
    return stat(corpus, &st) == 0 && S_ISREG(st.st_mode) && !owned(corpus);
}

/* What m is, as the errors below name it. */
static const char *model_kind(const gf_model *m) {
    return gf_model_config(m)->source_vocab > 0 ? "an encoder-decoder" : gf_model_predicts_next_token(m) ?
           "a language model" : "a classifier";
}

/* A checkpoint of one kind of task given the data of another: an error naming the checkpoint and what it is. */
static int task_mismatch(const gf_model *m, const gf_task_ops *task, const eval_args *a) {
    const bool tokens = task->label == NULL; /* a task of next tokens, not of labels */
    struct stat st;
    if (!tokens && gf_model_predicts_next_token(m))
        return cli_error("--task %s: %s is a language model; it predicts tokens, not labels\nHINT: score it on a text "
                         "corpus (--task %s), or train a classifier: grassflow train --task %s", task->name, a->ckpt,
                         first_task(false), task->name);
    if (tokens && !gf_model_predicts_next_token(m))
        return cli_error("--task %s: %s is a classifier (head %s, %lld classes); it predicts labels, not tokens\nHINT: "
                         "--task %s and its data", task->name, a->ckpt, gf_model_config(m)->head_kind,
                         (long long)gf_model_n_outputs(m), first_task(true));
    if (cli_given_has(&a->given, "split") && task->owns && task->owns(a->corpus, cli_data_dir()) == GF_TASK_OWNS_WHOLE)
        return cli_usage_error(a->cmd, "--split: %s is one file of examples, scored whole; a split is chosen in a "
                               "folder of splits (for snli: snli_1.0_{train,dev,test}.*)\nHINT: drop --split", a->corpus);
    /* a regular file no task knows by its name or first line: the task's reader says what it holds (a file of
     * pairs in no form there is: the forms there are), rather than only that it is not the task's */
    const char *missing = stat(a->corpus, &st) != 0 ? strerror(errno) : NULL; /* not a path either */
    if (task->owns && !task->owns(a->corpus, cli_data_dir()) && !unclaimed_file(a->corpus))
        return cli_error("--corpus %s holds no data of task %s (%s)%s%s; %s is %s, scored on that task's data\nHINT: "
                         "the data the model was trained on (grassflow train --help lists what each task reads)",
                         a->corpus, task->name, task->help, missing ? ", and as a path: " : "", missing ? missing : "",
                         a->ckpt, model_kind(m));
    for (int i = 0; i < gf_task_count(); i++) {
        const gf_task_ops *o = gf_task_at(i);
        if (o != task && o->owns && o->owns(a->corpus, cli_data_dir()))
            return cli_error("--corpus %s holds the data of task %s (%s); %s is %s, scored on the data of task %s",
                             a->corpus, o->name, o->help, a->ckpt, model_kind(m), task->name);
    }
    return EXIT_OK;
}

/* The vocabulary of m against the task's tokenizer (none: nothing to check). */
static int same_vocab(const gf_model *m, const gf_task_recipe *t, const void *data, const char *ckpt) {
    const gf_tokenizer *tok = t->task->tokenizer ? t->task->tokenizer(data) : NULL;
    const int64_t have = gf_model_config(m)->vocab_size, want = tok ? gf_tokenizer_vocab_size(tok) : have;
    if (have == want) return EXIT_OK;
    return cli_error("%s has vocab_size %lld but the tokenizer of --task %s gives %lld tokens (--corpus %s): the "
                     "vocabulary does not match the checkpoint\nHINT: the corpus and --tokenizer the model was trained "
                     "with, or a model made for this vocabulary (grassflow init ... --vocab %lld)", ckpt, (long long)have,
                     t->task->name, (long long)want, t->corpus, (long long)want);
}

/* What eval reports beside the perplexity of a text: the tokenizer's kind and the split's counts (have: the
 * task counts them). */
typedef struct {
    bool have;
    gf_tok_kind kind;
    gf_text_counts c;
    char protocol[512]; /* how the split was scored (gf_task_eval_protocol; "" if the task does not say) */
    bool decoded;       /* an encoder-decoder's: every example decoded greedily and scored (gf_evaluate_decoding) */
    gf_decode_scores dec;
} text_report;

/* The counts as JSON members: words, the perplexity per word (not word-level), then the ids for unknown text
 * (word, wordpiece) or the skipped characters (char). */
static void json_counts(const text_report *r, double total, int64_t predicted) {
    const gf_text_counts *c = &r->c;
    printf(", \"words\": %lld", (long long)c->words);
    if (r->kind != GF_TOK_WORD)
        printf(", \"word_ppl\": %s, \"tokens_per_word\": %s",
               gf_json_num(c->words ? exp(total / (double)c->words) : NAN, 'g', 9).s,
               gf_json_num(c->words ? (double)predicted / (double)c->words : NAN, 'g', 9).s);
    if (r->kind == GF_TOK_WORD || r->kind == GF_TOK_WORDPIECE)
        printf(", \"oov_tokens\": %lld, \"oov_rate\": %s", (long long)c->unknown,
               gf_json_num(c->tokens ? (double)c->unknown / (double)c->tokens : NAN, 'g', 9).s);
    if (r->kind == GF_TOK_CHAR)
        printf(", \"skipped_chars\": %lld, \"skipped_rate\": %s", (long long)c->skipped,
               gf_json_num((double)c->skipped / (double)(c->tokens + c->skipped), 'g', 9).s);
}

/* The perplexity per word of a subword model, with what makes it readable: exp(total / words) is the
 * per-token perplexity raised to the tokens per word (a char model's 30 per character is millions per word),
 * beside a uniform guess over the vocabulary raised the same. */
static void word_line(const text_report *r, double total, int64_t predicted, int64_t vocab) {
    const gf_text_counts *c = &r->c;
    char pb[32], tb[32], ub[32];
    if (!c->words || !predicted) {
        printf("  per word: %lld words  word ppl n/a (no word or no predicted token)\n", (long long)c->words);
        return;
    }
    const double per = (double)predicted / (double)c->words; /* predicted tokens per word */
    printf("  per word: %lld words  word ppl %s = ppl %s ^ %.3f tokens per word (a uniform guess over %lld tokens: "
           "%s; the split's total loss / its words, docs/model.md)\n", (long long)c->words,
           cli_ppl(pb, sizeof pb, exp(total / (double)c->words), 3), cli_ppl(tb, sizeof tb, exp(total / (double)predicted), 3),
           per, (long long)vocab, cli_ppl(ub, sizeof ub, pow((double)vocab, per), 3));
    if (r->kind == GF_TOK_CHAR && c->skipped)
        printf("  (the word ppl leaves out the loss of the %lld skipped characters below: lower than it would be)\n",
               (long long)c->skipped);
}

/* The same as lines under the perplexity. */
static void text_counts(const text_report *r, double total, int64_t predicted, int64_t vocab) {
    const gf_text_counts *c = &r->c;
    if (r->kind != GF_TOK_WORD) word_line(r, total, predicted, vocab);
    if (r->kind == GF_TOK_WORD || r->kind == GF_TOK_WORDPIECE)
        printf("  out of vocabulary: %lld of %lld tokens (%.2f%%) are %s for %s\n", (long long)c->unknown,
               (long long)c->tokens, c->tokens ? 100.0 * (double)c->unknown / (double)c->tokens : 0.0,
               r->kind == GF_TOK_WORD ? "<unk>" : "[UNK]",
               r->kind == GF_TOK_WORD ? "words the vocabulary lacks" : "words WordPiece could not piece");
    if (r->kind == GF_TOK_CHAR)
        printf("  unknown characters: %lld of %lld (%.2f%%) are outside the vocabulary: skipped, neither context nor "
               "scored\n", (long long)c->skipped, (long long)(c->tokens + c->skipped),
               100.0 * (double)c->skipped / (double)(c->tokens + c->skipped));
}

/* Perplexity on the split: batched (gf_evaluate), or streamed when asked or when a batch of one example would
 * pass a quarter of the memory (the same numbers), with what the split's text holds (r). */
/* An encoder-decoder's decoding scores as JSON members: the rates, and "by_source_length": {"S": [examples,
 * wrong], ...} ("64+" for longer sources). */
static void json_decoded(const gf_decode_scores *d, const eval_args *a) {
    const gf_decode_opts *o = &a->dec;
    if (a->en && a->en->n > 1) {
        printf(", \"ensemble_models\": %lld, \"ensemble\": ", (long long)a->en->n);
        gf_json_put_str(stdout, a->ensemble);
        printf(", \"loss_of\": \"--ckpt\""); /* the loss and ppl above: --ckpt's model alone */
    }
    if (o->beam > 1) printf(", \"decoded\": \"beam\", \"beam\": %lld, \"length_penalty\": %s", (long long)o->beam,
                            gf_json_num(o->length_penalty, 'g', 9).s);
    else printf(", \"decoded\": \"greedy\"");
    printf(", \"examples\": %lld, \"wer\": %s, \"per\": %s, \"by_source_length\": {", (long long)d->examples, gf_json_num((double)d->wrong / (double)d->examples, 'g', 9).s,
           gf_json_num((double)d->edits / (double)d->tokens, 'g', 9).s);
    for (int s = 0, first = 1; s <= GF_DECODE_BY_LEN; s++)
        if (d->len_examples[s]) {
            printf("%s\"%d%s\": [%lld, %lld]", first ? "" : ", ", s, s == GF_DECODE_BY_LEN ? "+" : "",
                   (long long)d->len_examples[s], (long long)d->len_wrong[s]);
            first = 0;
        }
    printf("}");
}

/* The exact-match rate by source length, one line: "  exact by source length: 1 100.0% (12), 2 ...". */
static void by_length(const gf_decode_scores *d) {
    printf("  exact by source length:");
    for (int s = 0, first = 1; s <= GF_DECODE_BY_LEN; s++)
        if (d->len_examples[s]) {
            printf("%s %d%s %.1f%% (%lld)", first ? "" : ",", s, s == GF_DECODE_BY_LEN ? "+" : "",
                   100.0 * (double)(d->len_examples[s] - d->len_wrong[s]) / (double)d->len_examples[s],
                   (long long)d->len_examples[s]);
            first = 0;
        }
    printf("\n");
}

static int eval_ppl(gf_model *m, gf_source *src, const eval_args *a, const text_report *r) {
    bool stream = a->stream;
    gf_batch b0;
    const int64_t n = gf_source_n_eval(src);
    if (!stream && n > 0 && gf_source_fill_eval(src, 0, 1, &b0) == 0 &&
        gf_model_forward_bytes(m, 1, b0.T) > gf_mem_limit() / 4) {
        fprintf(stderr, "note: a block of %lld tokens would need %.0f MiB of activations; scoring with the streaming "
                "engine (--stream) instead\n", (long long)b0.T, (double)gf_model_forward_bytes(m, 1, b0.T) / 1048576.0);
        stream = true;
    }
    double loss;
    int64_t k;
    if (stream ? eval_stream(m, src, &loss, &k) : gf_evaluate(m, src, a->B, &loss, &k))
        return cli_error("%s", gf_last_error());
    const double total = loss * (double)k; /* over every predicted token of the split */
    if (a->json) {
        printf("{\"split\": \"%s\", \"tokens\": %lld, \"loss\": %s, \"ppl\": %s", a->split, (long long)k,
               gf_json_num(loss, 'g', 9).s, gf_json_num(exp(loss), 'g', 9).s); /* not finite: null */
        if (r->have) json_counts(r, total, k);
        if (r->protocol[0]) {
            printf(", \"protocol\": ");
            gf_json_put_str(stdout, r->protocol);
        }
        if (a->override) printf(", \"override\": %s", a->override->json);
        if (r->decoded) json_decoded(&r->dec, a);
        printf("}\n");
    } else {
        char pb[32];
        printf("%s %s: tokens %lld  loss %.6f  ppl %s\n", a->corpus, a->split, (long long)k, loss,
               cli_ppl(pb, sizeof pb, exp(loss), 3));
        if (a->override) printf("  with %s (grassflow inspect %s)\n", a->override->text, a->override->flags);
        if (r->have) text_counts(r, total, k, gf_model_config(m)->vocab_size);
        if (r->decoded) {
            if (a->dec.beam > 1) printf("  decoded by beam search (beam %lld, length penalty %g):", (long long)a->dec.beam,
                                        a->dec.length_penalty);
            else printf("  decoded greedily:");
            if (a->en && a->en->n > 1)
                printf(" by an ensemble of %lld models (--ckpt and --ensemble; the loss above is --ckpt's alone):",
                       (long long)a->en->n);
            printf(" %lld examples, %lld wrong (%.2f%%: g2p's word error rate), %lld edits of %lld "
                   "target tokens (%.2f%%: g2p's phoneme error rate)\n", (long long)r->dec.examples, (long long)r->dec.wrong,
                   100.0 * (double)r->dec.wrong / (double)r->dec.examples, (long long)r->dec.edits,
                   (long long)r->dec.tokens, 100.0 * (double)r->dec.edits / (double)r->dec.tokens);
            by_length(&r->dec);
        }
        if (r->protocol[0]) printf("  protocol: %s\n", r->protocol);
    }
    cli_warn_ppl(exp(loss), gf_model_config(m)->vocab_size);
    return EXIT_OK;
}

/* An encoder-decoder's examples decoded (greedily, or by --beam; by --ensemble's models with m) and scored
 * against their targets into r. */
static int eval_decoding(gf_model *m, const gf_tokenizer *tok, gf_source *src, const eval_args *a, text_report *r) {
    gf_decode_opts o = a->dec; /* max_len: the model's (gf_decode_max_len) */
    o.bos = o.eos = gf_tokenizer_eos_id(tok);
    if (o.eos < 0) return EXIT_OK; /* no end token: nothing to decode to */
    gf_model *const *models = a->en ? a->en->models : &m;
    if (gf_ensemble_evaluate_decoding(models, a->en ? a->en->n : 1, src, &o, &r->dec))
        return cli_error("%s", gf_last_error());
    r->decoded = r->dec.examples > 0 && r->dec.tokens > 0;
    return EXIT_OK;
}

/* Score m on split a->si of task t's data. */
static int eval_task(gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t, const eval_args *a) {
    gf_task_env e = gf_task_recipe_env(t, cli_data_dir(), a->no_cache ? NULL : cli_cache_dir());
    e.fixed = tok;
    e.no_cache = a->no_cache;
    e.splits = 1u << a->si; /* the other splits are not read, so that they cannot fail it */
    e.score_only = true;    /* characters a char model never saw: skipped and counted, not refused */
    e.max_examples = a->limit; /* predict --limit N: a task may read the first N examples alone */
    void *data = NULL;
    if (t->task->load(&e, t->options.bytes, &data)) return cli_error("%s", gf_last_error());
    int rc = same_vocab(m, t, data, a->ckpt);
    gf_train_opts d;
    gf_train_opts_default(&d);
    gf_source *src = rc ? NULL : t->task->source(data, a->si, t->options.bytes, d.seed);
    if (!rc && !src) rc = cli_error("%s", gf_last_error());
    const gf_tokenizer *dt = !rc && t->task->tokenizer ? t->task->tokenizer(data) : NULL;
    text_report r = {.kind = dt ? gf_tokenizer_kind(dt) : GF_TOK_BYTE};
    r.have = dt && gf_task_text_counts(t->task, data, a->si, &r.c) == 0;
    gf_task_eval_protocol(t->task, data, t->options.bytes, r.protocol, sizeof r.protocol);
    if (!rc && gf_model_config(m)->source_vocab > 0 && dt && strcmp(a->cmd, "predict")) /* an encoder-decoder */
        rc = eval_decoding(m, dt, src, a, &r);
    if (!rc && !strcmp(a->cmd, "predict")) rc = cli_predict_print(m, dt, t->task, data, src, a);
    else if (!rc && !t->task->label) rc = eval_ppl(m, src, a, &r); /* a language model's task */
    else if (!rc) {
        const bool whole = t->task->owns && t->task->owns(a->corpus, cli_data_dir()) == GF_TASK_OWNS_WHOLE;
        rc = cli_eval_classify(m, t->task, data, src, a->corpus, whole ? NULL : a->si == GF_VALID ? "dev" : a->split,
                               a->B, a->json);
    }
    gf_source_free(src);
    t->task->free(data);
    return rc;
}

/* The checks passed: --ensemble's models loaded beside m, then an encoder-decoder's predictions printed, or the
 * split scored (eval_task). */
static int run_with_ensemble(gf_model *m, const gf_tokenizer *tok, const gf_task_recipe *t, const eval_args *a) {
    cli_ensemble en;
    eval_args b = *a;
    int rc = cli_ensemble_load(a, m, tok, t, &en);
    b.en = &en;
    const bool decode = !strcmp(a->cmd, "predict") && gf_model_config(m)->source_vocab > 0;
    if (!rc) rc = decode ? cli_predict_decode(m, tok, t, &b) : eval_task(m, tok, t, &b);
    cli_ensemble_free(&en);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    eval_args a = {.cmd = "eval", .split = "valid", .B = 16, .dec = gf_decode_opts_default()};
    int rc = cli_eval_parse(argc, argv, &a, help);
    return rc ? (rc < 0 ? EXIT_OK : rc) : cli_eval_run(&a);
}

int cli_eval_run(const eval_args *a) {
    int rc;
    gf_tokenizer *tok = NULL;
    char *rj = NULL;
    gf_model *m = cli_load_checkpoint(a->ckpt, &tok, &rj);
    if (!m) return cli_error("%s", gf_last_error());
    if ((a->weights_given && (rc = cli_set_weights(m, a->weights, a->ckpt))) ||
        (a->override && (rc = cli_eval_override(m, a->override)))) {
        free(rj);
        gf_tokenizer_free(tok);
        gf_model_free(m);
        return rc;
    }
    char by[4096];
    gf_task_recipe t;
    rc = pick_task(m, a, rj, &t, by, sizeof by);
    free(rj);
    if (rc)
        ; /* refused */
    else if (tok && a->tok_spec)
        rc = cli_usage_error(a->cmd, "--tokenizer: %s carries its own tokenizer; drop the flag", a->ckpt);
    else if ((rc = task_mismatch(m, t.task, a)))
        ; /* refused */
    else if (!strcmp(a->cmd, "predict") && gf_model_config(m)->source_vocab > 0 &&
             (cli_given_has(&a->given, "split") || cli_given_has(&a->given, "batch")))
        rc = cli_usage_error(a->cmd, "%s: %s is an encoder-decoder: predict decodes every line of --corpus, one at a time "
                             "(no split, no batch)\nHINT: drop the flag", cli_given_has(&a->given, "split") ? "--split" :
                             "--batch", a->ckpt);
    else if (!strcmp(a->cmd, "predict") && gf_model_config(m)->source_vocab > 0)
        rc = run_with_ensemble(m, tok, &t, a);
    else if (a->align_dir || a->force)
        rc = cli_usage_error(a->cmd, "%s: %s is not an encoder-decoder: it has no alignment to draw", a->align_dir ?
                             "--align-dir" : "--force", a->ckpt);
    else if (gf_model_config(m)->source_vocab < 1 && (a->dec.beam > 1 || a->dec.length_penalty > 0))
        rc = cli_usage_error(a->cmd, "%s: %s is not an encoder-decoder: it decodes nothing", a->dec.beam > 1 ? "--beam" :
                             "--length-penalty", a->ckpt);
    else if (!strcmp(a->cmd, "predict") && gf_model_predicts_next_token(m))
        rc = cli_error("predict: %s is a language model; predict gives a classifier's label of each example\nHINT: "
                       "grassflow eval for its perplexity, grassflow generate for text", a->ckpt);
    else if (t.task->version >= 2 && t.task->check_options && t.task->check_options(t.options.bytes, gf_model_config(m)))
        rc = cli_usage_error(a->cmd, "%s", gf_last_error());
    else
        rc = run_with_ensemble(m, tok, &t, a);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}

int cli_eval_override(gf_model *m, const cli_override *ov) {
    if (!gf_model_set_override(m, &ov->o, 1)) return EXIT_OK;
    const char *e = gf_last_error();
    return cli_error("%s: %s", ov->flags, strncmp(e, "override: ", 10) ? e : e + 10);
}
