/* grassflow info: a model's config and parameter count. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "task_flags.h"

static void help(void) {
    printf("usage: grassflow info (--model PRESET | --config FILE) [--vocab N] [--set KEY=VALUE]... [--json]\n"
           "       grassflow info --mixers | --tasks\n\n"
           "Print the config and the parameter count of a model.\n\n" CLI_MODEL_HELP
           "  --json              one JSON object: {\"config\": {...}, \"params\": N}\n"
           "  --tensors           also list every tensor with its shape\n"
           "  --mixers            list the mixers a layer can have, each with its keys, ranges and defaults\n"
           "  --tasks             list the tasks train, eval and compare know, each with its options\n");
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

int cmd_info(int argc, char **argv) {
    static const struct option longopts[] = {
        CLI_MODEL_LONGOPTS, {"json", no_argument, 0, OPT_JSON}, {"tensors", no_argument, 0, 't'},
        {"mixers", no_argument, 0, 'M'}, {"tasks", no_argument, 0, 'T'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    int json = 0, tensors = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = cli_model_option(&mo, "info", opt, optarg);
        if (r == 1) continue;
        if (r > 1) return r;
        if (opt == OPT_JSON) json = 1;
        else if (opt == 't') tensors = 1;
        else if (opt == 'M') return list_mixers();
        else if (opt == 'T') { cli_task_help(); return EXIT_OK; }
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("info", "unknown option");
    }
    if (optind < argc) return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);
    gf_config cfg;
    int rc = cli_model_config(&mo, "info", &cfg);
    if (rc) return rc;
    int64_t n = gf_config_num_params(&cfg);
    char *cj = gf_config_to_json(&cfg, !json);
    if (json) {
        printf("{\"config\":%s,\"params\":%lld}\n", cj, (long long)n);
    } else {
        char nb[48];
        commas(nb, sizeof nb, n);
        printf("model       %s\n", mo.preset ? mo.preset : mo.config_path);
        printf("parameters  %s\n", nb);
        printf("layers      ");
        for (int l = 0; l < gf_config_total_layers(&cfg); l++) {
            const int k = gf_layer_stack(&cfg, l);
            if (k > 0 && l == gf_stack_first_layer(&cfg, k)) printf(" | %s: ", cfg.stacks[k - 1].name);
            else if (l) printf(",");
            printf("%s", cfg.layers[l].mixer);
        }
        printf("  (norm %s)\n", cfg.norm == GF_NORM_PRE ? "pre" : "post");
        printf("config\n%s\n", cj);
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
