/* grassflow init: a freshly initialised checkpoint. */
#include <getopt.h>
#include <unistd.h>
#include <stdio.h>

#include "cli.h"

static void help(void) {
    printf("usage: grassflow init (--model PRESET | --config FILE) [--vocab N] [--set KEY=VALUE]... \\\n"
           "                      [--seed S] --out FILE.safetensors\n\n"
           "Write a model initialised with N(0, 0.02) weights, zero biases and unit LayerNorms.\n\n");
    cli_model_help();
    printf("  --seed S            initialisation seed (default 1234); the same seed gives the same file\n"
           "  --out FILE          where to write the checkpoint (atomically; an existing file only with --force)\n"
           "  --force             replace an existing --out file\n");
}

int cmd_init(int argc, char **argv) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, {"seed", required_argument, 0, 's'},
                                             {"out", required_argument, 0, 'o'}, {"force", no_argument, 0, 'f'},
                                             {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    const char *out = NULL;
    int64_t seed = 1234;
    int opt, force = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = cli_model_option(&mo, "init", opt, optarg);
        if (r == 1) continue;
        if (r > 1) return r;
        if (opt == 's') {
            int rc = cli_parse_i64("init", "--seed", optarg, 0, INT64_MAX, &seed);
            if (rc) return rc;
        } else if (opt == 'o') out = optarg;
        else if (opt == 'f') force = 1;
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("init", "unknown option");
    }
    if (optind < argc) return cli_usage_error("init", "unexpected argument '%s'", argv[optind]);
    if (!out) return cli_usage_error("init", "--out FILE.safetensors is required");
    const char *inputs[] = {mo.config_path};
    if (cli_output_check(out, "--out", inputs, 1, force, "give --force to replace it"))
        return cli_error("%s", gf_last_error());
    gf_config cfg;
    int rc = cli_model_config(&mo, "init", &cfg);
    if (rc) return rc;
    gf_model *m = gf_model_create(&cfg);
    if (!m) return cli_error("%s", gf_last_error());
    gf_model_init(m, (uint64_t)seed);
    if (gf_model_save(m, out)) {
        gf_model_free(m);
        return cli_error("%s", gf_last_error());
    }
    printf("%s: %lld parameters, seed %lld\n", out, (long long)gf_model_num_params(m), (long long)seed);
    gf_model_free(m);
    return EXIT_OK;
}
