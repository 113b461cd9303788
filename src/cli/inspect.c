/* grassflow inspect: what each layer of a language model does with a text (the library's gf_model_inspect: gates,
 * each offset's part, Pluecker coordinates, attention weights) as a summary, JSON and SVG heat maps; and the loss
 * of a text or of a corpus split with an offset dropped or a gate forced (gf_model_set_override), a split read
 * and scored exactly as grassflow eval reads and scores it (eval.c, with the override set on the model). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "eval.h"
#include "inspect.h"

/* The most tokens the analysis reads: its JSON holds tokens x tokens attention weights per head and tokens x
 * channels gates per layer. Scoring under an override (--drop-offset, --force-gate) has no limit of its own. */
#define INSPECT_MAX_TOKENS 1024

enum { O_TEXT = 3000, O_TEXT_FILE, O_DROP, O_GATE, O_LAYER, O_OUT_JSON, O_SVG_DIR, O_TOP_K, O_SVG_TOKENS, O_FORCE,
       O_TARGET };
static const struct option OPTS[] = {
    {"text", 1, 0, O_TEXT},         {"text-file", 1, 0, O_TEXT_FILE}, {"drop-offset", 1, 0, O_DROP},
    {"force-gate", 1, 0, O_GATE},   {"layer", 1, 0, O_LAYER},         {"out-json", 1, 0, O_OUT_JSON},
    {"svg-dir", 1, 0, O_SVG_DIR},   {"top-k", 1, 0, O_TOP_K},         {"svg-tokens", 1, 0, O_SVG_TOKENS},
    {"force", 0, 0, O_FORCE},       {"no-cache", 0, 0, 'n'},          {"target", 1, 0, O_TARGET},
    {0, 0, 0, 0}};


static void help(void) {
    printf("usage: grassflow inspect --ckpt FILE (--text TEXT | --text-file FILE) [--json] [--out-json FILE]\n"
           "                         [--svg-dir DIR] [--top-k K] [--svg-tokens N] [--force]\n"
           "       grassflow inspect --ckpt FILE (--drop-offset D | --force-gate 0|1) [--layer K]\n"
           "                         (--text TEXT | --text-file FILE | --corpus C [--split S] [--batch B]) [--json]\n\n"
           "What each layer of a language model does with a text, token by token (the text's n tokens read whole:\n"
           "n inputs, n - 1 next-token predictions; n <= max_len with learned positions, and at most %d):\n"
           "  a Grassmann layer (m = a h + (1 - a) g, g = mean over its offsets D of W phat_D + bias):\n"
           "    its gate a per channel and its mean over the channels; each offset's contribution |W phat_D(t)| /\n"
           "    n_valid(t) (its term in the mean, without the bias; n_valid(t): the offsets whose partner t - D\n"
           "    exists) and its share (over the sum of the contributions at t); the loss change, overall and at each\n"
           "    token, when that offset is dropped from the layer; the loss with its gate forced to 0 and to 1; its\n"
           "    most active Pluecker coordinates: pairs (i, j) of reduced dimensions by mean |phat_ij| over S_t;\n"
           "  an attention layer: its weights, head by head (a model without Grassmann layers: those alone).\n"
           "Printed as a summary, or as JSON (docs/usage.md, \"grassflow inspect\": the schema), and drawn as SVG\n"
           "heat maps with the tokens' text on the axes.\n\n"
           "An encoder-decoder (grassflow train --task g2p): --text is the source (a word, read as predict reads a\n"
           "line), --target its target (the phonemes between spaces; default: the model's greedy decoding); the\n"
           "encoder's layers are shown over the source (a Grassmann layer pairs both ways: offset -D is the partner\n"
           "t + D), the decoder's over <eos> (its first input), the target and the end, each with its attention over\n"
           "the source (layerK-cross.svg).\n\n"
           "With --drop-offset or --force-gate, inspect scores the text, or a corpus split as grassflow eval does,\n"
           "with that change made at evaluation time (the weights untouched), and prints the loss and perplexity:\n"
           "a dropped offset is exactly the model whose config does not list it; a gate forced to 1 (a = 1: m = h,\n"
           "the mixer passes its input through) is the model without that layer's Grassmann update; forced to 0\n"
           "(m = g), its Grassmann update alone.\n\n"
           "  --ckpt FILE         a checkpoint of a language model that carries its tokenizer (grassflow train)\n"
           "  --text TEXT         the text, read by the checkpoint's tokenizer as a corpus is (word: <eos> at each\n"
           "                      line end and at the end)\n"
           "  --text-file FILE    the text from a file\n"
           "  --target PIECES     an encoder-decoder's target for --text (default: its greedy decoding)\n"
           "  --json              print the analysis (or the loss) as one JSON object\n"
           "  --out-json FILE     write the analysis's JSON to FILE (replaces an earlier inspect JSON; another file\n"
           "                      only with --force)\n"
           "  --svg-dir DIR       draw the heat maps into DIR (made if missing): layerK-gates.svg, -offsets.svg,\n"
           "                      -plucker.svg (a Grassmann layer), layerK-attention.svg (an attention layer);\n"
           "                      replaces SVG files, another file only with --force\n"
           "  --top-k K           Pluecker coordinates listed per token and per layer in the JSON (default 5)\n"
           "  --svg-tokens N      the first N tokens are drawn (default 48; 2 to 256); the JSON has them all\n"
           "  --force             replace a file at --out-json, or in --svg-dir, that inspect did not write\n"
           "  --drop-offset D     score with offset D dropped from layer --layer (default: from every Grassmann\n"
           "                      layer that lists it)\n"
           "  --force-gate 0|1    score with the gate of layer --layer (default: of every Grassmann layer) forced to\n"
           "                      0 (m = g) or 1 (m = h); with --drop-offset, both in the same layers\n"
           "  --layer K           the layer, from 0 over all stacks (grassflow info --ckpt FILE lists them)\n"
           "  --corpus C          score a split of C under the override, exactly as grassflow eval (its JSON, with\n"
           "                      \"override\"); --split, --batch, --tokenizer, --task, --no-cache and the task's\n"
           "                      options as for eval:\n", INSPECT_MAX_TOKENS);
    cli_task_help();
}

static int take_option(eval_args *a, int opt, const char *arg) {
    inspect_opts *o = a->extra_ctx;
    switch (opt) {
    case O_TEXT: o->text = arg; return EXIT_OK;
    case O_TEXT_FILE: o->text_file = arg; return EXIT_OK;
    case O_TARGET: o->target = arg; return EXIT_OK;
    case O_OUT_JSON: o->out_json = arg; return EXIT_OK;
    case O_SVG_DIR: o->svg_dir = arg; return EXIT_OK;
    case O_FORCE: o->force = true; return EXIT_OK;
    case O_DROP: return cli_parse_i64("inspect", "--drop-offset", arg, 1, 1 << 20, &o->drop);
    case O_TOP_K: return cli_parse_i64("inspect", "--top-k", arg, 1, 64, &o->top_k);
    case O_SVG_TOKENS: return cli_parse_i64("inspect", "--svg-tokens", arg, 2, 256, &o->svg_tokens);
    case O_LAYER: o->layer_given = true; return cli_parse_i64("inspect", "--layer", arg, 0, GF_MAX_LAYERS - 1, &o->layer);
    case O_GATE:
        if (strcmp(arg, "0") && strcmp(arg, "1"))
            return cli_usage_error("inspect", "--force-gate expects 0 (a = 0: m = g, the layer's Grassmann update alone) "
                                   "or 1 (a = 1: m = h, the model without it), got '%s'", arg);
        o->gate = arg[0] - '0';
        return EXIT_OK;
    default: return -1;
    }
}

/* The first of names[0..n) the command line gave (NULL: none). */
static const char *given_of(const eval_args *a, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (cli_given_has(&a->given, names[i])) return names[i];
    return NULL;
}

/* The flags that go together, and those that do not. */
static int check_flags(const eval_args *a, const inspect_opts *o) {
    static const char *const analysis[] = {"out-json", "svg-dir", "top-k", "svg-tokens", "force"};
    static const char *const corpus[] = {"split", "batch", "tokenizer", "task", "no-cache"};
    const bool scoring = o->drop > 0 || o->gate >= 0;
    const char *g;
    if (!a->ckpt) return cli_usage_error("inspect", "--ckpt FILE is required");
    if (!!o->text + !!o->text_file + !!a->corpus != 1)
        return cli_usage_error("inspect", "give one of --text TEXT and --text-file FILE%s", scoring ? " and --corpus C" : "");
    if (a->corpus && !scoring)
        return cli_usage_error("inspect", "--corpus: a split is scored under --drop-offset D or --force-gate 0|1; the "
                               "analysis reads one text\nHINT: --text TEXT or --text-file FILE, or add --drop-offset "
                               "or --force-gate");
    if (o->layer_given && !scoring)
        return cli_usage_error("inspect", "--layer K picks the layer of --drop-offset or --force-gate; the analysis "
                               "shows every layer\nHINT: drop --layer, or add --drop-offset D or --force-gate 0|1");
    if (scoring && (g = given_of(a, analysis, 5)))
        return cli_usage_error("inspect", "--%s belongs to the analysis (without --drop-offset and --force-gate); with "
                               "them inspect prints a loss\nHINT: drop --%s, or run the analysis on its own", g, g);
    if (!a->corpus && ((g = given_of(a, corpus, 5)) || a->targs.n))
        return cli_usage_error("inspect", "--%s applies to --corpus (a split scored under an override); a text is read "
                               "whole\nHINT: drop it, or give --corpus C", g ? g : a->targs.flag[0]);
    if (o->target && a->corpus)
        return cli_usage_error("inspect", "--target goes with --text (an encoder-decoder's source); a split has its own "
                               "targets\nHINT: drop --target");
    if (o->force && !o->out_json && !o->svg_dir)
        return cli_usage_error("inspect", "--force replaces a file at --out-json or in --svg-dir; neither was given");
    return EXIT_OK;
}

/* The override of --drop-offset, --force-gate and --layer, with its flags and how the output shows it. */
static void make_override(const inspect_opts *o, cli_override *ov) {
    const int layer = o->layer_given ? (int)o->layer : -1;
    ov->o = (gf_override){layer, (int)o->drop, o->gate < 0 ? GF_GATE_LEARNED : o->gate ? GF_GATE_ONE : GF_GATE_ZERO};
    char where[48], drop[48] = "", gate[96] = "", lj[16] = "null", dj[16] = "null", gj[8] = "null";
    if (layer >= 0) snprintf(where, sizeof where, "layer %d", layer), snprintf(lj, sizeof lj, "%d", layer);
    else snprintf(where, sizeof where, "every Grassmann layer%s", o->drop ? " that lists it" : "");
    if (o->drop) snprintf(drop, sizeof drop, "offset %lld dropped", (long long)o->drop), snprintf(dj, sizeof dj, "%lld", (long long)o->drop);
    if (o->gate >= 0)
        snprintf(gate, sizeof gate, "%sthe gate forced to a = %d (%s)", o->drop ? " and " : "", o->gate,
                 o->gate ? "m = h: without the Grassmann update" : "m = g: the Grassmann update alone"),
            snprintf(gj, sizeof gj, "%d", o->gate);
    snprintf(ov->text, sizeof ov->text, "%s%s in %s", drop, gate, where);
    snprintf(ov->json, sizeof ov->json, "{\"layer\": %s, \"drop_offset\": %s, \"force_gate\": %s}", lj, dj, gj);
    int n = 0;
    if (o->drop) n += snprintf(ov->flags + n, sizeof ov->flags - (size_t)n, "--drop-offset %lld", (long long)o->drop);
    if (o->gate >= 0) n += snprintf(ov->flags + n, sizeof ov->flags - (size_t)n, "%s--force-gate %d", n ? " " : "", o->gate);
    if (layer >= 0) snprintf(ov->flags + n, sizeof ov->flags - (size_t)n, " --layer %d", layer);
}

/* The ids of --text or --text-file read by tok as a corpus is (gf_tokenizer_encode), into *ids (*n, >= 2). */
static int text_ids(const inspect_opts *o, const gf_tokenizer *tok, int32_t **ids, int64_t *n) {
    size_t len = o->text ? strlen(o->text) : 0;
    char *file = NULL;
    if (o->text_file && !(file = (char *)gf_read_file(o->text_file, (size_t)64 << 20, &len)))
        return cli_error("--text-file: %s", gf_last_error());
    const char *what = o->text_file ? o->text_file : "--text";
    int rc = gf_tokenizer_encode(tok, file ? file : o->text, len, what, ids, n) ? cli_error("%s", gf_last_error()) : 0;
    free(file);
    if (!rc && *n < 2)
        rc = cli_error("%s: the text gives %lld token%s; inspect needs 2 or more (each token after the first is "
                       "predicted from those before it)\nHINT: give a longer text", o->text_file ? gf_show_name(what) : what,
                       (long long)*n, *n == 1 ? "" : "s");
    return rc;
}

/* A text the model cannot read whole: longer than max_len with learned positions (or, for the analysis, than
 * INSPECT_MAX_TOKENS). */
static int check_length(const gf_config *c, int64_t n, const inspect_opts *o, bool analysis) {
    const char *what = o->text_file ? gf_show_name(o->text_file) : "--text";
    if (c->pos == GF_POS_LEARNED && n > c->max_len)
        return cli_error("%s: the text gives %lld tokens; this model reads at most max_len = %lld (learned positions), "
                         "and inspect reads a text whole\nHINT: a shorter text (its first %lld tokens)", what,
                         (long long)n, (long long)c->max_len, (long long)c->max_len);
    if (analysis && n > INSPECT_MAX_TOKENS)
        return cli_error("%s: the text gives %lld tokens; the analysis reads at most %d (its JSON holds tokens x tokens "
                         "attention weights and tokens x channels gates)\nHINT: a shorter text; --drop-offset and "
                         "--force-gate score a text of any length", what, (long long)n, INSPECT_MAX_TOKENS);
    return EXIT_OK;
}

/* The text's loss under the override and without it. */
static int score_text(gf_model *m, const int32_t *ids, int64_t n, const cli_override *ov, bool json) {
    double base, loss;
    if (gf_model_score(m, ids, n, &base, NULL)) return cli_error("%s", gf_last_error());
    int rc = cli_eval_override(m, ov);
    if (rc) return rc;
    if (gf_model_score(m, ids, n, &loss, NULL)) return cli_error("%s", gf_last_error());
    if (json) {
        printf("{\"tokens\": %lld, \"predicted\": %lld, \"loss\": %s, \"ppl\": %s, ", (long long)n, (long long)n - 1,
               gf_json_num(loss, 'g', 9).s, gf_json_num(exp(loss), 'g', 9).s);
        printf("\"base_loss\": %s, \"base_ppl\": %s, \"delta\": %s, \"override\": %s}\n", gf_json_num(base, 'g', 9).s,
               gf_json_num(exp(base), 'g', 9).s, gf_json_num(loss - base, 'g', 9).s, ov->json);
        return EXIT_OK;
    }
    char pb[32], qb[32];
    printf("text: %lld tokens, %lld predicted: loss %.6f  ppl %s\n  with %s (%s)\n  without it: loss %.6f  ppl %s  "
           "(change %+.6f)\n", (long long)n, (long long)n - 1, loss, cli_ppl(pb, sizeof pb, exp(loss), 3), ov->text,
           ov->flags, base, cli_ppl(qb, sizeof qb, exp(base), 3), loss - base);
    return EXIT_OK;
}

/* Whether path holds an inspection's JSON (what --out-json replaces without --force). */
static bool holds_inspect_json(const char *path) {
    char head[64] = "";
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    const size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    return !strncmp(head, "{\"grassflow_inspect\":", 21);
}

/* The output rule of --out-json and of the figures' files, before anything is written. */
static int check_outputs(const gf_inspection *x, const char *const *pieces, const inspect_opts *o,
                         const inspect_svg_opts *so) {
    struct stat st;
    if (o->out_json) {
        const bool ours = stat(o->out_json, &st) == 0 && S_ISREG(st.st_mode) && holds_inspect_json(o->out_json);
        if (cli_output_check(o->out_json, "--out-json", so->inputs, so->n_inputs, o->force || ours,
                             "inspect replaces its own JSON; give --force to replace another file"))
            return cli_error("inspect: %s", gf_last_error());
    }
    return o->svg_dir ? cli_inspect_svgs(x, pieces, so, false) : EXIT_OK;
}

/* Grassmann layer L in a few lines: its gate, its offsets, its coordinates. */
static void summary_grassmann(const gf_inspection *x, const gf_inspect_layer *L) {
    const int64_t T = L->positions, K = L->n_offsets;
    printf("layer %d %s (rank %lld, %d offsets)", L->layer, L->mixer, (long long)L->rank, L->n_offsets);
    if (L->gate_mean) {
        double s = 0, lo = INFINITY, hi = -INFINITY;
        for (int64_t t = 0; t < T; t++) s += L->gate_mean[t], lo = fmin(lo, L->gate_mean[t]), hi = fmax(hi, L->gate_mean[t]);
        printf(": gate a mean %.3f (per token %.3f to %.3f); loss change with a = 0: %+.4f, a = 1: %+.4f", s / (double)T,
               lo, hi, L->gate_loss[0] - x->loss, L->gate_loss[1] - x->loss);
    }
    printf("\n  %8s %12s %18s %26s   (means over the tokens with a partner t - D%s)\n", "offset D", "mean share",
           "mean contribution", "loss change when dropped", L->encoder ? "; D < 0: t + |D|" : "");
    for (int64_t o = 0; o < K; o++) {
        double share = 0, contrib = 0;
        int64_t with = 0;
        for (int64_t t = 0; t < T; t++)
            if (L->valid[t * K + o]) share += L->share[t * K + o], contrib += L->contrib[t * K + o], with++;
        printf("  %8d %12.4f %18.5f %+26.6f\n", L->offsets[o], with ? share / (double)with : 0.0,
               with ? contrib / (double)with : 0.0, L->drop_loss[o] - x->loss);
    }
}

/* An attention layer's mean distance attended, head by head: the sum over keys of weight x |t - s|, averaged
 * over the queries. */
static void summary_attention(const gf_inspect_layer *L) {
    const int64_t P = L->positions;
    printf("layer %d %s (%lld heads): mean distance attended, head by head:", L->layer, L->mixer, (long long)L->n_head);
    for (int64_t h = 0; h < L->n_head; h++) {
        double s = 0;
        for (int64_t t = 0; t < P; t++)
            for (int64_t k = 0; k < P; k++) s += L->attn[(h * P + t) * P + k] * fabs((double)(t - k));
        printf(" %.2f", s / (double)P);
    }
    printf("\n");
}

/* A decoder layer's attention over the source: the source position (from 1) each target token reads most, the
 * heads' mean. */
static void summary_cross(const gf_inspection *x, const gf_inspect_layer *L) {
    const int64_t T = x->T, S = x->S, H = L->cross_heads;
    printf("layer %d attention over the source (%lld heads' mean): the position each target token reads most:",
           L->layer, (long long)H);
    for (int64_t t = 0; t < T; t++) {
        int64_t best = 0;
        double bv = -1;
        for (int64_t s = 0; s < S; s++) {
            double v = 0;
            for (int64_t h = 0; h < H; h++) v += L->cross[(h * T + t) * S + s];
            if (v > bv) bv = v, best = s;
        }
        printf(" %lld", (long long)best + 1);
    }
    printf("\n");
}

/* The analysis as text: the loss, then each layer. */
static void summary(const gf_inspection *x) {
    char pb[32];
    if (x->S) printf("source: %lld tokens; target: <eos>, %lld tokens and the end, %lld predicted: loss %.6f  ppl %s\n",
                     (long long)x->S, (long long)x->T - 2, (long long)x->T - 1, x->loss, cli_ppl(pb, sizeof pb, exp(x->loss), 3));
    else printf("text: %lld tokens, %lld predicted: loss %.6f  ppl %s\n", (long long)x->T, (long long)x->T - 1, x->loss,
                cli_ppl(pb, sizeof pb, exp(x->loss), 3));
    for (int l = 0; l < x->n_layers; l++) {
        const gf_inspect_layer *L = &x->layers[l];
        if (x->S) printf("%s ", L->encoder ? "encoder" : "decoder");
        if (L->kind == GF_INSPECT_GRASSMANN) summary_grassmann(x, L);
        if (L->kind == GF_INSPECT_OTHER) printf("layer %d %s: not inspected (inspect reads Grassmann and attention layers)\n", l, L->mixer);
        if (L->kind == GF_INSPECT_ATTENTION) summary_attention(L);
        if (L->cross_heads) summary_cross(x, L);
    }
}

int cli_inspect_report(const gf_inspection *x, const char *const *pieces, const eval_args *a, const inspect_opts *o) {
    char *json = NULL;
    int rc = EXIT_OK;
    const char *inputs[] = {a->ckpt, o->text_file};
    const inspect_svg_opts so = {.dir = o->svg_dir, .ckpt = a->ckpt, .max_tokens = (int)o->svg_tokens,
                                 .force = o->force, .inputs = inputs, .n_inputs = 2};
    if (!rc) rc = check_outputs(x, pieces, o, &so);
    if (!rc && (a->json || o->out_json) && !(json = gf_inspection_to_json(x, pieces, (int)o->top_k)))
        rc = cli_error("%s", gf_last_error());
    if (!rc && o->out_json && gf_write_file_atomic(o->out_json, json, strlen(json)))
        rc = cli_error("--out-json: %s", gf_last_error());
    if (!rc && o->svg_dir) rc = cli_inspect_svgs(x, pieces, &so, true);
    if (!rc && a->json) printf("%s\n", json);
    else if (!rc) summary(x);
    free(json);
    return rc;
}

/* The analysis of ids: checked outputs, then the JSON, the figures, the summary. */
static int analyse(gf_model *m, const gf_tokenizer *tok, const int32_t *ids, int64_t n, const eval_args *a,
                   const inspect_opts *o) {
    gf_inspection *x = gf_model_inspect(m, ids, n);
    if (!x) return cli_error("%s", gf_last_error());
    char **pieces = calloc((size_t)n, sizeof *pieces);
    int rc = pieces ? EXIT_OK : cli_error("out of memory");
    for (int64_t t = 0; !rc && t < n; t++)
        if (!(pieces[t] = cli_piece(tok, ids[t]))) rc = cli_error("out of memory");
    if (!rc) rc = cli_inspect_report(x, (const char *const *)pieces, a, o);
    for (int64_t t = 0; pieces && t < n; t++) free(pieces[t]);
    free(pieces);
    gf_inspection_free(x);
    return rc;
}

/* Which layers the analysis can read: a note when it shows attention weights alone; an error when nothing. */
static int check_layers(const gf_model *m, const char *ckpt) {
    const gf_config *c = gf_model_config(m);
    int g = 0, at = 0;
    for (int l = 0; l < gf_config_total_layers(c); l++)
        g += !strcmp(c->layers[l].mixer, "grassmann"), at += !strcmp(c->layers[l].mixer, "attention");
    if (!g && at) fprintf(stderr, "grassflow: note: %s has no Grassmann layer: inspect shows its attention weights alone\n", gf_show_name(ckpt));
    if (!g && !at)
        return cli_error("%s has neither Grassmann nor attention layers (its first layer's mixer: %s); inspect reads "
                         "those two kinds", gf_show_name(ckpt), c->layers[0].mixer);
    return EXIT_OK;
}

/* A text: the analysis, or its loss under the override. */
static int text_mode(const eval_args *a, const inspect_opts *o, const cli_override *ov) {
    gf_tokenizer *tok = NULL;
    char *rj = NULL;
    gf_model *m = cli_load_checkpoint(a->ckpt, &tok, &rj);
    if (!m) return cli_error("%s", gf_last_error());
    int32_t *ids = NULL;
    int64_t n = 0;
    int rc = EXIT_OK;
    if (gf_model_config(m)->source_vocab > 0) { /* an encoder-decoder: its own reading (inspect_pair.c) */
        rc = cli_inspect_pair(m, tok, rj, a, o, ov);
        free(rj);
        gf_tokenizer_free(tok);
        gf_model_free(m);
        return rc;
    }
    free(rj);
    if (!gf_model_predicts_next_token(m))
        rc = cli_error("%s is a classifier (head %s); inspect reads a language model's next-token predictions",
                       gf_show_name(a->ckpt), gf_model_config(m)->head_kind);
    else if (!tok)
        rc = cli_error("%s carries no tokenizer (a checkpoint of grassflow init?); inspect reads text\nHINT: a "
                       "checkpoint of grassflow train", gf_show_name(a->ckpt));
    if (!rc) rc = text_ids(o, tok, &ids, &n);
    if (!rc) rc = check_length(gf_model_config(m), n, o, !ov);
    if (!rc && !ov) rc = check_layers(m, a->ckpt);
    if (!rc) rc = ov ? score_text(m, ids, n, ov, a->json) : analyse(m, tok, ids, n, a, o);
    free(ids);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}

int cmd_inspect(int argc, char **argv) {
    inspect_opts o = {.top_k = 5, .svg_tokens = 48, .gate = -1};
    eval_args a = {.cmd = "inspect", .split = "valid", .B = 16, .extra_opts = OPTS, .extra = take_option, .extra_ctx = &o};
    int rc = cli_eval_parse(argc, argv, &a, help);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    if ((rc = check_flags(&a, &o))) return rc;
    cli_override ov;
    const bool scoring = o.drop > 0 || o.gate >= 0;
    if (scoring) make_override(&o, &ov);
    if (!a.corpus) return text_mode(&a, &o, scoring ? &ov : NULL);
    a.override = &ov; /* a split read and scored as grassflow eval does, the override set on the model */
    return cli_eval_run(&a);
}
