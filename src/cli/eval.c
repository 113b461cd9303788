/* grassflow eval: perplexity of a checkpoint on a corpus split. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/eval_classify.h"
#include "core/mem.h"
#include "data/corpus.h"
#include "io/json_out.h"
#include "data/nli_reader.h"
#include "train/trainer.h"

static void help(void) {
    printf("usage: grassflow eval --ckpt FILE --corpus C [--split valid|test|train] [--seq-len L] [--batch B]\n"
           "                      [--tokenizer T] [--stream] [--json] [--task lm|snli] [--max-sent N]\n\n"
           "A language model (task lm): the token-weighted mean next-token loss and perplexity of a checkpoint\n"
           "on a whole split, in blocks of L + 1 tokens with stride L, so every token but the first is predicted\n"
           "once. A sentence-pair classifier (task snli): accuracy, per-class precision and recall, the confusion\n"
           "matrix and the mean loss (--json: {\"split\", \"pairs\", \"accuracy\", \"loss\", \"per_class\",\n"
           "\"confusion\"}).\n\n"
           "  --ckpt FILE     a checkpoint from grassflow train (it carries its tokenizer)\n"
           "  --corpus C      wikitext-2 | tinyshakespeare | a directory | a file (as for train)\n"
           "  --split S       valid (default; dev is the same split), test or train\n"
           "  --task T        lm or snli (default: the task the checkpoint was trained for; for one without a\n"
           "                  training recipe, snli if it is a classifier, else lm)\n"
           "  --max-sent N    snli: WordPiece pieces kept per sentence (default: the training run's)\n"
           "  --seq-len L     block length (default: the training run's, else max_len)\n"
           "  --batch B       blocks per forward pass (default 16)\n"
           "  --tokenizer T   only for checkpoints without a stored tokenizer (e.g. from init)\n"
           "  --stream        score with the streaming engine, one token at a time (reset at each block);\n"
           "                  the same numbers as the batched default, at any L for pos none/sinusoidal\n"
           "  --json          print {\"split\", \"tokens\", \"loss\", \"ppl\"} (a number that is not finite: null)\n");
}

/* gf_evaluate's examples (the LM source: blocks of L + 1 tokens, stride L), each scored by the streaming
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

/* Score split si of corpus c with m: batched (gf_evaluate) or streamed. */
static int eval_split(gf_model *m, const gf_corpus *c, int si, int64_t L, int64_t B, bool stream, double *loss,
                      int64_t *n) {
    gf_source *src = gf_lm_source_create(c->split[si].v, c->split[si].n, L, 0);
    if (!src) return -1;
    /* a block whose forward alone would pass a quarter of the memory is streamed: the same numbers */
    const int64_t len = c->split[si].n - 1 < L ? c->split[si].n - 1 : L;
    if (!stream && len > 0 && gf_model_forward_bytes(m, 1, len) > gf_mem_limit() / 4) {
        fprintf(stderr, "note: a block of %lld tokens would need %.0f MiB of activations; scoring with the streaming "
                "engine (--stream) instead\n", (long long)len, (double)gf_model_forward_bytes(m, 1, len) / 1048576.0);
        stream = true;
    }
    int rc = stream ? eval_stream(m, src, loss, n) : gf_evaluate(m, src, B, loss, n);
    gf_source_free(src);
    return rc;
}

typedef struct {
    const char *ckpt, *corpus, *split, *tok_spec, *task;
    int64_t L, B, max_sent;
    int json, no_cache, stream, si;
    cli_given given;   /* the long options given: those of a task that is not the checkpoint's are refused */
} eval_args;

/* The command line into *a; EXIT_OK, an exit code, or -1 after --help. */
static int parse_args(int argc, char **argv, eval_args *a) {
    static const struct option longopts[] = {{"ckpt", 1, 0, 'c'},     {"corpus", 1, 0, 'C'}, {"split", 1, 0, 's'},
                                             {"seq-len", 1, 0, 'L'},  {"batch", 1, 0, 'b'},  {"tokenizer", 1, 0, 't'},
                                             {"json", 0, 0, 'j'},     {"no-cache", 0, 0, 'n'}, {"stream", 0, 0, 'S'},
                                             {"task", 1, 0, 'T'},     {"max-sent", 1, 0, 'M'},
                                             {"help", 0, 0, 'h'},     {0, 0, 0, 0}};
    *a = (eval_args){.split = "valid", .B = 16};
    int opt, rc, idx = -1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        cli_given_note(&a->given, longopts, idx);
        idx = -1;
        switch (opt) {
        case 'c': a->ckpt = optarg; break;
        case 'C': a->corpus = optarg; break;
        case 's': a->split = optarg; break;
        case 'L': if ((rc = cli_parse_i64("eval", "--seq-len", optarg, 1, 1 << 24, &a->L))) return rc; break;
        case 'b': if ((rc = cli_parse_i64("eval", "--batch", optarg, 1, 1 << 20, &a->B))) return rc; break;
        case 't': a->tok_spec = optarg; break;
        case 'j': a->json = 1; break;
        case 'n': a->no_cache = 1; break;
        case 'S': a->stream = 1; break;
        case 'T': a->task = optarg; break;
        case 'M': if ((rc = cli_parse_i64("eval", "--max-sent", optarg, 1, 4096, &a->max_sent))) return rc; break;
        case 'h': help(); return -1;
        default: return cli_usage_error("eval", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("eval", "unexpected argument '%s'", argv[optind]);
    if (!a->ckpt || !a->corpus) return cli_usage_error("eval", "--ckpt FILE and --corpus C are required");
    a->si = strcmp(a->split, "dev") ? gf_split_index(a->split) : GF_VALID;
    if (a->si < 0) return cli_usage_error("eval", "--split must be train, valid (or dev) or test, not '%s'", a->split);
    return EXIT_OK;
}

/* A language model's loss and perplexity on the split, in blocks of a->L tokens. */
static int eval_lm(gf_model *m, const gf_tokenizer *tok, const eval_args *a) {
    const gf_config *cfg = gf_model_config(m);
    gf_corpus *c = gf_corpus_load(a->corpus, cli_data_dir(), a->tok_spec, tok, a->no_cache ? NULL : cli_cache_dir());
    int rc = EXIT_OK;
    if (!c) {
        rc = cli_error("%s", gf_last_error());
    } else if (c->tok->vocab.n != cfg->vocab_size) {
        rc = cli_error("%s has vocab_size %lld but the %s tokenizer of corpus %s gives %lld tokens: the vocabulary "
                       "does not match the checkpoint\nHINT: use the corpus and --tokenizer the model was trained with",
                       a->ckpt, (long long)cfg->vocab_size, gf_tok_kind_name(c->tok->kind), a->corpus,
                       (long long)c->tok->vocab.n);
    } else if (cfg->pos == GF_POS_LEARNED && a->L > cfg->max_len) {
        rc = cli_usage_error("eval", "--seq-len %lld is above the model's max_len %lld", (long long)a->L,
                             (long long)cfg->max_len);
    } else {
        double loss;
        int64_t n;
        if (eval_split(m, c, a->si, a->L, a->B, a->stream, &loss, &n)) {
            rc = cli_error("%s", gf_last_error());
        } else if (a->json) {
            printf("{\"split\": \"%s\", \"tokens\": %lld, \"loss\": %s, \"ppl\": %s}\n", a->split, (long long)n,
                   gf_json_num(loss, 'g', 9).s, gf_json_num(exp(loss), 'g', 9).s); /* not finite: null */
        } else {
            char pb[32];
            printf("%s %s: tokens %lld  loss %.6f  ppl %s\n", a->corpus, a->split, (long long)n, loss,
                   cli_ppl(pb, sizeof pb, exp(loss), 3));
        }
        if (!rc) cli_warn_ppl(exp(loss), cfg->vocab_size);
    }
    gf_corpus_free(c);
    return rc;
}

/* The task to score m with: --task, else the one its training run recorded, else what the model is (a
 * classifier: the one classification task; otherwise a language model). *by: how it was chosen. */
static const cli_task *pick_task(const gf_model *m, const eval_args *a, const char *recipe_task, char *by, size_t n) {
    by[0] = '\0';
    if (a->task) return cli_task_find(a->task, "eval");
    if (recipe_task) snprintf(by, n, "the task %.3000s was trained for", a->ckpt);
    else if (!gf_model_predicts_next_token(m)) snprintf(by, n, "%.3000s is a classifier", a->ckpt);
    else snprintf(by, n, "the default");
    return cli_task_find(recipe_task ? recipe_task : gf_model_predicts_next_token(m) ? "lm" : "snli", "eval");
}

/* A checkpoint of one task given the data of another: an error naming the checkpoint and what it is. */
static int task_mismatch(const gf_model *m, const cli_task *task, const eval_args *a) {
    const bool lm = !strcmp(task->name, "lm"), pairs = gf_nli_is_spec(a->corpus, cli_data_dir());
    const gf_config *cfg = gf_model_config(m);
    if (!lm && gf_model_predicts_next_token(m))
        return cli_error("--task %s: %s is a language model; it predicts tokens, not labels\nHINT: score it on a text "
                         "corpus (--task lm), or train a classifier: grassflow train --task %s", task->name, a->ckpt,
                         task->name);
    if (lm && !gf_model_predicts_next_token(m))
        return cli_error("--task lm: %s is a classifier (task %s, %lld classes); it predicts labels, not tokens\nHINT: "
                         "--task snli --corpus snli (or a folder of SNLI files)", a->ckpt, cfg->task,
                         (long long)gf_model_n_outputs(m));
    if (lm && pairs)
        return cli_error("--corpus %s holds sentence pairs (task snli); %s is a language model, scored on text\nHINT: "
                         "a text corpus (wikitext-2, tinyshakespeare, a directory or a file)", a->corpus, a->ckpt);
    if (!lm && !pairs)
        return cli_error("--corpus %s holds no sentence pairs; %s is a classifier, scored on the pairs of --task %s"
                         "\nHINT: --corpus snli, or a folder of SNLI files (snli_1.0_dev.jsonl, ...)", a->corpus,
                         a->ckpt, task->name);
    return EXIT_OK;
}

int cmd_eval(int argc, char **argv) {
    eval_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    gf_tokenizer *tok = NULL;
    char *rj = NULL;
    gf_model *m = cli_load_checkpoint(a.ckpt, &tok, &rj);
    if (!m) return cli_error("%s", gf_last_error());
    gf_train_opts o; /* the training run's recipe, if the checkpoint has one */
    const bool have_recipe = rj && gf_train_opts_from_json(rj, a.ckpt, &o) == 0;
    free(rj);
    char by[4096];
    const cli_task *task = pick_task(m, &a, have_recipe ? o.task : NULL, by, sizeof by);
    if (!task)
        rc = EXIT_USAGE;
    else if (tok && a.tok_spec)
        rc = cli_usage_error("eval", "--tokenizer: %s carries its own tokenizer; drop the flag", a.ckpt);
    else if ((rc = task_mismatch(m, task, &a)) || (rc = cli_task_flags(task, by[0] ? by : NULL, "eval", &a.given)))
        ; /* refused */
    else if (strcmp(task->name, "lm"))
        rc = cli_eval_classify(m, tok, task, &(cli_eval_data){.ckpt = a.ckpt, .corpus = a.corpus, .tok_spec = a.tok_spec},
                               a.si, a.B, a.max_sent ? a.max_sent : have_recipe ? o.max_sent : 48, a.json);
    else {
        if (!a.L) a.L = have_recipe ? o.seq_len : gf_model_config(m)->max_len; /* the run's block length */
        rc = eval_lm(m, tok, &a);
    }
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
