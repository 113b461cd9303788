/* grassflow eval of a classifier (task snli): accuracy, per-class precision and recall, the confusion
 * matrix, and the mean loss, on one split. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/eval_classify.h"
#include "data/corpus.h"
#include "data/nli_reader.h"

/* Precision and recall of class c from the confusion matrix (rows: true labels). */
static void prec_rec(const int64_t *conf, int64_t C, int64_t c, double *p, double *r) {
    int64_t col = 0, row = 0;
    for (int64_t k = 0; k < C; k++) {
        col += conf[k * C + c];
        row += conf[c * C + k];
    }
    *p = col ? (double)conf[c * C + c] / (double)col : 0.0;
    *r = row ? (double)conf[c * C + c] / (double)row : 0.0;
}

/* EXIT_OK, or EXIT_RUNTIME when the JSON could not be made (out of memory). */
static int print_json(const char *split, const gf_eval_result *er, int64_t C) {
    cJSON *o = cJSON_CreateObject(), *pc = cJSON_CreateObject(), *cm = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "split", split);
    cJSON_AddNumberToObject(o, "pairs", (double)er->n_counted);
    cJSON_AddNumberToObject(o, "accuracy", (double)er->n_correct / (double)er->n_counted);
    cJSON_AddNumberToObject(o, "loss", er->mean_loss);
    for (int64_t c = 0; c < C; c++) {
        double p, r;
        prec_rec(er->confusion, C, c, &p, &r);
        cJSON *e = cJSON_AddObjectToObject(pc, gf_nli_label_name((int)c));
        cJSON_AddNumberToObject(e, "precision", p);
        cJSON_AddNumberToObject(e, "recall", r);
        cJSON *row = cJSON_CreateArray();
        for (int64_t k = 0; k < C; k++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)er->confusion[c * C + k]));
        cJSON_AddItemToArray(cm, row);
    }
    cJSON_AddItemToObject(o, "per_class", pc);
    cJSON_AddItemToObject(o, "confusion", cm); /* rows: true label, columns: predicted, in label order */
    char *s = cJSON_PrintUnformatted(o); /* a value that is not finite (a diverged model's loss) prints as null */
    const bool made = s != NULL;
    if (made) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    return made ? EXIT_OK : cli_error("out of memory printing the results as JSON");
}

static void print_text(const char *corpus, const char *split, const gf_eval_result *er, int64_t C) {
    printf("%s %s: pairs %lld  accuracy %.4f  loss %.4f\n", corpus, split, (long long)er->n_counted,
           (double)er->n_correct / (double)er->n_counted, er->mean_loss);
    printf("  %-14s %9s %9s   confusion (rows: true, columns: predicted)\n", "class", "precision", "recall");
    for (int64_t c = 0; c < C; c++) {
        double p, r;
        prec_rec(er->confusion, C, c, &p, &r);
        printf("  %-14s %9.4f %9.4f  ", gf_nli_label_name((int)c), p, r);
        for (int64_t k = 0; k < C; k++) printf(" %7lld", (long long)er->confusion[c * C + k]);
        printf("\n");
    }
}

/* The vocabulary of m against the task's tokenizer: a classifier from grassflow init has its preset's. */
static int same_vocab(const gf_model *m, const cli_task *task, const void *data, const cli_eval_data *d) {
    const int64_t have = gf_model_config(m)->vocab_size, want = gf_tokenizer_vocab_size(task->tokenizer(data));
    if (have == want) return EXIT_OK;
    return cli_error("%s has vocab_size %lld but the tokenizer of --task %s gives %lld pieces: the vocabulary does not "
                     "match the checkpoint\nHINT: --tokenizer wordpiece:VOCAB_FILE of %lld pieces, or a classifier made for "
                     "this one (grassflow init ... --vocab %lld)", d->ckpt, (long long)have, task->name, (long long)want,
                     (long long)have, (long long)want);
}

int cli_eval_classify(gf_model *m, const gf_tokenizer *tok, const cli_task *task, const cli_eval_data *d, int split,
                      int64_t batch, int64_t max_sent, bool json) {
    static const char *const names[3] = {"train", "dev", "test"};
    const char *corpus = d->corpus;
    gf_train_opts o;
    gf_train_opts_default(&o);
    o.max_sent = max_sent;
    if (cli_copy_arg("eval", "--corpus", corpus, o.corpus, sizeof o.corpus) ||
        (d->tok_spec && cli_copy_arg("eval", "--tokenizer", d->tok_spec, o.tokenizer, sizeof o.tokenizer)))
        return EXIT_USAGE;
    void *data = NULL;
    int rc = task->load_split ? task->load_split(&o, tok, split, &data) : task->load(&o, true, tok, &data);
    if (rc) return rc;
    if ((rc = same_vocab(m, task, data, d))) {
        task->free(data);
        return rc;
    }
    const int64_t C = gf_model_n_outputs(m);
    gf_source *src = task->source(data, split, &o);
    /* the source checks the model (n_classes the task's labels) before a C x C matrix is asked for */
    const bool ok = src && (!src->check || !src->check(src->ctx, m, GF_USE_EVAL));
    gf_eval_result er = {.confusion = ok && C > 0 && C <= 4096 ? calloc((size_t)(C * C), sizeof(int64_t)) : NULL};
    if (!ok || !er.confusion || gf_evaluate_result(m, src, batch, &er)) {
        rc = cli_error("%s", !ok || er.confusion ? gf_last_error()
                                                 : C > 4096 ? "a classifier of more than 4096 classes has no confusion "
                                                              "matrix to print" : "out of memory");
    } else if (json) {
        rc = print_json(names[split], &er, C);
    } else {
        print_text(corpus, names[split], &er, C);
    }
    free(er.confusion);
    gf_source_free(src);
    task->free(data);
    return rc;
}
