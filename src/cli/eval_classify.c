/* grassflow eval of a classifier (a task scored by accuracy): accuracy, per-class precision and recall, the
 * confusion matrix, and the mean loss, on one split, the classes named as the task names them. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_classify.h"

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

/* The task's name of class c ("class C" past the names it has: a model of more classes than its data). */
static const char *label(const gf_task_ops *t, const void *data, int64_t c) {
    static char buf[32];
    const char *name = t->label ? t->label(data, c) : NULL;
    if (name) return name;
    snprintf(buf, sizeof buf, "class %lld", (long long)c);
    return buf;
}

/* EXIT_OK, or EXIT_RUNTIME when the JSON could not be made (out of memory). */
/* seconds: the forward passes over the n examples (no reading, no setup) */
static int print_json(const gf_task_ops *t, const void *data, const char *split, const gf_eval_result *er, int64_t C,
                      double seconds, int64_t n) {
    cJSON *o = cJSON_CreateObject(), *pc = cJSON_CreateObject(), *cm = cJSON_CreateArray();
    if (split) cJSON_AddStringToObject(o, "split", split);
    else cJSON_AddNullToObject(o, "split"); /* a file scored whole */
    cJSON_AddNumberToObject(o, t->counted, (double)er->n_counted);
    char rate[64];
    snprintf(rate, sizeof rate, "%s_per_s", t->counted);
    cJSON_AddNumberToObject(o, "seconds", seconds);
    cJSON_AddNumberToObject(o, rate, seconds > 0 ? (double)n / seconds : 0.0);
    cJSON_AddNumberToObject(o, "accuracy", (double)er->n_correct / (double)er->n_counted);
    const gf_metric *mt = gf_task_metric(t); /* a task scored by a metric of its own: that too */
    if (mt != &gf_metric_accuracy) cJSON_AddNumberToObject(o, mt->name, mt->score(er));
    cJSON_AddNumberToObject(o, "loss", er->mean_loss);
    for (int64_t c = 0; c < C; c++) {
        double p, r;
        prec_rec(er->confusion, C, c, &p, &r);
        cJSON *e = cJSON_AddObjectToObject(pc, label(t, data, c));
        cJSON_AddNumberToObject(e, "precision", p);
        cJSON_AddNumberToObject(e, "recall", r);
        cJSON *row = cJSON_CreateArray();
        for (int64_t k = 0; k < C; k++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)er->confusion[c * C + k]));
        cJSON_AddItemToArray(cm, row);
    }
    cJSON_AddItemToObject(o, "per_class", pc);
    cJSON_AddItemToObject(o, "confusion", cm); /* rows: true label, columns: predicted, in label order */
    char *s = gf_json_utf8(cJSON_PrintUnformatted(o)); /* a value that is not finite (a diverged model's loss) prints as
                                                         * null; a class name that is not UTF-8 has U+FFFD */
    const bool made = s != NULL;
    if (made) printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    return made ? EXIT_OK : cli_error("out of memory printing the results as JSON");
}

static void print_text(const gf_task_ops *t, const void *data, const char *corpus, const char *split,
                       const gf_eval_result *er, int64_t C) {
    const gf_metric *mt = gf_task_metric(t);
    char own[96] = ""; /* a task scored by a metric of its own: that first */
    if (mt != &gf_metric_accuracy) snprintf(own, sizeof own, "  %s %.*f", mt->title, mt->decimals, mt->score(er));
    printf("%s%s%s: %s %lld%s  accuracy %.4f  loss %.4f\n", corpus, split ? " " : "", split ? split : "", t->counted,
           (long long)er->n_counted, own, (double)er->n_correct / (double)er->n_counted, er->mean_loss);
    printf("  %-14s %9s %9s   confusion (rows: true, columns: predicted)\n", "class", "precision", "recall");
    for (int64_t c = 0; c < C; c++) {
        double p, r;
        char cell[GF_ESCAPE_CAP(256) + 14];
        prec_rec(er->confusion, C, c, &p, &r);
        cli_escape_cut(cell, sizeof cell, label(t, data, c), 14); /* a class name from the data: no control */
        printf("  %s %9.4f %9.4f  ", cell, p, r);
        for (int64_t k = 0; k < C; k++) printf(" %7lld", (long long)er->confusion[c * C + k]);
        printf("\n");
    }
}

/* How many of src's evaluation examples have a label: an error when none has (a file of unlabelled pairs),
 * a note when some have not (predict shows them). EXIT_OK or an exit code. */
static int count_labelled(const gf_task_ops *t, gf_source *src, const char *corpus) {
    const int64_t n = gf_source_n_eval(src);
    int64_t labelled = 0;
    for (int64_t k = 0; k < n; k += 256) {
        gf_batch b;
        if (gf_source_fill_eval(src, k, n - k < 256 ? n - k : 256, &b)) return cli_error("%s", gf_last_error());
        labelled += b.n_targets;
    }
    if (!labelled)
        return cli_error("%s: none of its %lld %s has a gold label; eval scores labelled ones\nHINT: grassflow "
                         "predict --corpus %s gives each one's predicted label", corpus, (long long)n, t->counted, corpus);
    if (labelled < n)
        fprintf(stderr, "note: %lld of the %lld %s of %s have no gold label: not counted (grassflow predict shows "
                "them)\n", (long long)(n - labelled), (long long)n, t->counted, corpus);
    return EXIT_OK;
}

int cli_eval_classify(gf_model *m, const gf_task_ops *t, const void *data, gf_source *src, const char *corpus,
                      const char *split, int64_t batch, bool json) {
    if (count_labelled(t, src, corpus)) return EXIT_RUNTIME;
    const int64_t C = gf_model_n_outputs(m);
    /* the source checks the model (n_classes the task's labels) before a C x C matrix is asked for */
    const bool ok = !src->check || !src->check(src->ctx, m, GF_USE_EVAL);
    gf_eval_result er = {.confusion = ok && C > 0 && C <= 4096 ? calloc((size_t)(C * C), sizeof(int64_t)) : NULL};
    int rc = EXIT_OK;
    const double t0 = gf_clock_s();
    if (!ok || !er.confusion || gf_evaluate_result(m, src, batch, &er))
        rc = cli_error("%s", !ok || er.confusion ? gf_last_error()
                                                 : C > 4096 ? "a classifier of more than 4096 classes has no confusion "
                                                              "matrix to print" : "out of memory");
    else if (json)
        rc = print_json(t, data, split, &er, C, gf_clock_s() - t0, gf_source_n_eval(src));
    else
        print_text(t, data, corpus, split, &er, C);
    free(er.confusion);
    return rc;
}
