/* grassflow info: a model's config and parameter count. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "task_flags.h"

static void help(void) {
    printf("usage: grassflow info (--model PRESET | --config FILE) [--vocab N] [--set KEY=VALUE]... [--json]\n"
           "       grassflow info --ckpt FILE [--json]\n"
           "       grassflow info --mixers | --tasks | --presets\n\n"
           "Print the config and the parameter count of a model; with --ckpt, what a checkpoint holds: its\n"
           "config, task, parameters, tokenizer, training recipe and training state (step, validation loss).\n\n");
    cli_model_help();
    printf("  --ckpt FILE         a checkpoint (best.safetensors, last.safetensors, a run's state.safetensors,\n"
           "                      grassflow init's files), checked as eval would load it\n"
           "  --json              one JSON object: {\"config\": {...}, \"params\": N}\n"
           "  --tensors           also list every tensor with its shape\n"
           "  --mixers            list the mixers a layer can have, each with its keys, ranges and defaults\n"
           "  --tasks             list the tasks train, eval and compare know, each with its options\n"
           "  --presets           list the model presets with their parameter counts and layers\n");
}

/* Every registered mixer with its help and keys. */
static int list_mixers(void) {
    const char *names[64];
    int n = gf_mixer_names(names, 64);
    for (int i = 0; i < n && i < 64; i++) {
        char *d = gf_mixer_describe(names[i]);
        if (!d) return cli_error("out of memory describing mixer %s", names[i]);
        printf("%s%s", i ? "\n" : "", d);
        free(d);
    }
    return EXIT_OK;
}

static void commas(char *buf, size_t n, int64_t v) {
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)v);
    size_t len = strlen(raw), j = 0;
    for (size_t i = 0; i < len && j + 2 < n; i++) {
        buf[j++] = raw[i];
        if ((len - i - 1) % 3 == 0 && i + 1 < len) buf[j++] = ',';
    }
    buf[j] = '\0';
}

/* The parameters of preset name, or -1 if there is none. */
static int64_t preset_params(const char *name) {
    gf_config cfg;
    if (gf_config_preset(name, &cfg)) return -1;
    return gf_config_num_params(&cfg);
}

/* For a preset NAME-SIZE (a hybrid, another mixer) beside grassmann-SIZE and transformer-SIZE: their
 * parameter counts on one line, so a size-matched comparison shows it is one. */
static void print_peers(const char *name) {
    const char *size = strrchr(name, '-');
    if (!size || !strncmp(name, "grassmann-", 10) || !strncmp(name, "transformer-", 12)) return;
    char g[64], t[64], gb[48], tb[48];
    snprintf(g, sizeof g, "grassmann%s", size);
    snprintf(t, sizeof t, "transformer%s", size);
    const int64_t ng = preset_params(g), nt = preset_params(t);
    if (ng < 0 || nt < 0) return;
    commas(gb, sizeof gb, ng);
    commas(tb, sizeof tb, nt);
    printf("beside      %s %s, %s %s\n", g, gb, t, tb);
}

/* The layers of cfg, runs of one mixer counted: "grassmann x3, attention, grassmann x2"; each further stack's
 * after its name ("grassmann x3 | decoder: grassmann x3"). */
static void print_layer_runs(const gf_config *cfg) {
    for (int k = 0; k <= cfg->n_stacks; k++) {
        const int first = gf_stack_first_layer(cfg, k), end = first + (int)gf_stack_layers(cfg, k);
        if (k) printf(" | %s: ", cfg->stacks[k - 1].name);
        for (int l = first; l < end;) {
            int n = 1;
            while (l + n < end && !strcmp(cfg->layers[l + n].mixer, cfg->layers[l].mixer)) n++;
            printf("%s%s", l > first ? ", " : "", cfg->layers[l].mixer);
            if (n > 1) printf(" x%d", n);
            l += n;
        }
    }
}

/* info --presets: every preset with its parameters and layers. */
static int list_presets(void) {
    printf("%-22s %12s %10s  %s\n", "preset", "parameters", "vocabulary", "layers");
    for (const char *const *p = gf_preset_names(); *p; p++) {
        gf_config cfg;
        if (gf_config_preset(*p, &cfg)) return cli_error("preset %s: %s", *p, gf_last_error());
        char nb[48], vb[48];
        commas(nb, sizeof nb, gf_config_num_params(&cfg));
        commas(vb, sizeof vb, cfg.vocab_size);
        printf("%-22s %12s %10s  ", *p, nb, vb);
        print_layer_runs(&cfg);
        printf("  (d %lld)\n", (long long)cfg.d_model);
    }
    printf("\nThe parameters at the preset's vocabulary; a corpus brings its own (train and compare size the model\n"
           "to it: WikiText-2's 33,278 words, Tiny Shakespeare's 65 characters). The count at another:\n"
           "grassflow info --model PRESET --vocab N\n");
    return EXIT_OK;
}

/* The text form of a model: name, parameters, layers, config. */
static void print_model(const char *name, const gf_config *cfg, int64_t n, const char *cj) {
    char nb[48];
    commas(nb, sizeof nb, n);
    printf("model       %s\n", name);
    printf("parameters  %s\n", nb);
    print_peers(name);
    printf("layers      ");
    for (int l = 0; l < gf_config_total_layers(cfg); l++) {
        const int k = gf_layer_stack(cfg, l);
        if (k > 0 && l == gf_stack_first_layer(cfg, k)) printf(" | %s: ", cfg->stacks[k - 1].name);
        else if (l) printf(",");
        printf("%s", cfg->layers[l].mixer);
    }
    printf("  (norm %s)\n", cfg->norm == GF_NORM_PRE ? "pre" : "post");
    printf("config\n%s\n", cj);
}

/* A number of the description, or NAN. */
static double dnum(const cJSON *d, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(d, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The training line: step and validation score, as far as the file records them. */
static void print_training(const cJSON *d, const gf_config *cfg) {
    const double step = dnum(d, "step"), vl = isnan(dnum(d, "val_loss")) ? dnum(d, "best_val_loss") : dnum(d, "val_loss");
    const double acc = dnum(d, "best_val_acc");
    if (isnan(step)) {
        printf("training    none recorded (a file from grassflow init or gf_model_save)\n");
        return;
    }
    printf("training    step %.0f", step);
    if (!isnan(vl)) printf(", %svalidation loss %.4f", cJSON_GetObjectItem(d, "val_loss") ? "" : "best ", vl);
    if (!isnan(vl) && !strcmp(cfg->head_kind, "next_token")) printf(" (ppl %.2f)", exp(vl));
    if (!isnan(acc)) printf(", best validation accuracy %.4f", acc);
    printf("\n");
}

/* info --ckpt FILE: what gf_checkpoint_describe says, as text or JSON. */
static int describe_ckpt(const char *path, int json) {
    char *dj = gf_checkpoint_describe(path);
    if (!dj) return cli_error("%s", gf_last_error());
    cJSON *d = cJSON_Parse(dj);
    char *cj = d ? cJSON_PrintUnformatted(cJSON_GetObjectItem(d, "config")) : NULL;
    gf_config cfg;
    int rc = EXIT_OK;
    if (!d || !cj || gf_config_from_json(cj, path, &cfg)) rc = cli_error("describing %s: %s", path, d && cj ? gf_last_error() : "out of memory");
    else if (json) printf("%s\n", dj);
    else {
        const cJSON *tok = cJSON_GetObjectItem(d, "tokenizer"), *rec = cJSON_GetObjectItem(d, "recipe");
        char prod[GF_ESCAPE_CAP(256)], task[GF_ESCAPE_CAP(64)]; /* the file's words: no control character */
        cli_escape_cut(prod, sizeof prod, cJSON_IsString(cJSON_GetObjectItem(d, "producer")) ?
                       cJSON_GetObjectItem(d, "producer")->valuestring : "an unknown producer", 0);
        cli_escape_cut(task, sizeof task, cJSON_GetObjectItem(d, "task")->valuestring, 0);
        printf("checkpoint  %s (%s, %.1f MB, written by %s)\n", path, cJSON_GetObjectItem(d, "kind")->valuestring,
               dnum(d, "bytes") / 1e6, prod);
        printf("task        %s (head %s)\n", task, cfg.head_kind);
        const cJSON *w = cJSON_GetObjectItem(d, "weights");
        if (cJSON_IsString(w) && strcmp(w->valuestring, "fp32"))
            printf("weights     %s matrices (grassflow quantize; biases, LayerNorms, positions fp32)\n", w->valuestring);
        if (cJSON_IsObject(tok)) printf("tokenizer   %s, %.0f pieces\n", cJSON_GetObjectItem(tok, "kind")->valuestring, dnum(tok, "vocab_size"));
        else printf("tokenizer   none stored (give --tokenizer where a command needs one)\n");
        print_training(d, &cfg);
        char *rj = rec ? cJSON_PrintUnformatted(rec) : NULL;
        if (rj) printf("recipe      %s\n", rj);
        free(rj);
        char *pretty = gf_config_to_json(&cfg, true);
        print_model(path, &cfg, (int64_t)dnum(d, "params"), pretty ? pretty : cj);
        free(pretty);
    }
    free(cj);
    cJSON_Delete(d);
    free(dj);
    return rc;
}

int cmd_info(int argc, char **argv) {
    static const struct option longopts[] = {
        CLI_MODEL_LONGOPTS, {"json", no_argument, 0, OPT_JSON}, {"tensors", no_argument, 0, 't'},
        {"mixers", no_argument, 0, 'M'}, {"tasks", no_argument, 0, 'T'}, {"presets", no_argument, 0, 'P'}, {"ckpt", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    int json = 0, tensors = 0, opt;
    const char *ckpt = NULL;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = cli_model_option(&mo, "info", opt, optarg);
        if (r == 1) continue;
        if (r > 1) return r;
        if (opt == OPT_JSON) json = 1;
        else if (opt == 't') tensors = 1;
        else if (opt == 'C') ckpt = optarg;
        else if (opt == 'M') return list_mixers();
        else if (opt == 'P') return list_presets();
        else if (opt == 'T') { cli_task_help(); return EXIT_OK; }
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("info", "unknown option");
    }
    if (optind < argc) return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);
    if (ckpt && (mo.preset || mo.config_path))
        return cli_usage_error("info", "--ckpt describes a checkpoint's own model; leave out --model/--config");
    if (ckpt) return describe_ckpt(ckpt, json);
    gf_config cfg;
    int rc = cli_model_config(&mo, "info", &cfg);
    if (rc) return rc;
    int64_t n = gf_config_num_params(&cfg);
    char *cj = gf_config_to_json(&cfg, !json);
    if (json) {
        printf("{\"config\":%s,\"params\":%lld}\n", cj, (long long)n);
    } else {
        print_model(mo.preset ? mo.preset : mo.config_path, &cfg, n, cj);
    }
    free(cj);
    if (tensors && !json) {
        gf_model *m = gf_model_create(&cfg);
        if (!m) return cli_error("%s", gf_last_error());
        for (int i = 0; i < gf_model_num_tensors(m); i++) {
            const gf_tensor_info *t = gf_model_tensor(m, i);
            if (t->ndim == 2) printf("  %-36s (%lld, %lld)\n", t->name, (long long)t->shape[0], (long long)t->shape[1]);
            else printf("  %-36s (%lld)\n", t->name, (long long)t->shape[0]);
        }
        gf_model_free(m);
    }
    return EXIT_OK;
}
