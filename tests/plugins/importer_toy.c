/* An importer added from this file alone: no line of the library or of the command-line tool names it. It is
 * registered (gf_importer_register) before main runs and linked into a build of the grassflow command
 * against the installed library (tests/project/install.sh: grassflow-toy), whose features --ckpt then reads the
 * format, and into tests/unit/test_plugin.c.
 *
 * The format "toy": a folder holding toy-model.txt, one line "PRESET SEED": the preset's model over 256 bytes,
 * initialised from SEED, with the byte tokenizer. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow_plugin.h"

/* DIR/toy-model.txt into buf; false when there is none. */
static bool toy_file(const char *dir, char *buf, size_t n) {
    return snprintf(buf, n, "%s/toy-model.txt", dir) < (int)n;
}

static bool toy_detect(const char *path) {
    char f[4096];
    FILE *fp = toy_file(path, f, sizeof f) ? fopen(f, "r") : NULL;
    if (fp) fclose(fp);
    return fp != NULL;
}

static gf_model *toy_load(const char *path, gf_tokenizer **tok) {
    char f[4096], preset[64];
    unsigned long long seed = 0;
    FILE *fp = toy_file(path, f, sizeof f) ? fopen(f, "r") : NULL;
    const int got = fp ? fscanf(fp, "%63s %llu", preset, &seed) : 0;
    if (fp) fclose(fp);
    if (got != 2) return gf_fail("%s: expected one line \"PRESET SEED\"", f), NULL;
    gf_config cfg;
    if (gf_config_preset(preset, &cfg)) return gf_fail("%s: %s", f, gf_last_error()), NULL;
    cfg.vocab_size = 256;
    gf_model *m = gf_model_create(&cfg);
    if (!m) return NULL;
    gf_model_init(m, seed);
    *tok = gf_tokenizer_bytes();
    return m;
}

static const gf_importer TOY = {.version = GF_IMPORTER_VERSION, .name = "toy",
                                .what = "a toy folder (toy-model.txt: PRESET SEED)", .label = "a toy folder",
                                .detect = toy_detect, .load = toy_load};

__attribute__((constructor)) static void register_toy(void) {
    if (gf_importer_register(&TOY)) {
        fprintf(stderr, "importer_toy: %s\n", gf_last_error());
        exit(3);
    }
}
