/* Train a tiny language model from C through the public API alone (include/grassflow.h): a Grassmann
 * model from a preset, the bytes of a text as tokens (vocabulary 256), the LM data source over them,
 * gf_train with a progress callback, gf_evaluate before and after.
 *
 * Built in the source tree by `make examples` (build/examples/train); against an installed grassflow
 * (make install; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if PREFIX is not a system one), from this folder:
 *
 *     cc -std=c11 -Wall -Wextra -O2 -o train train.c $(pkg-config --cflags --libs grassflow)
 *     cc -std=c11 -Wall -Wextra -O2 -o train-static train.c $(pkg-config --cflags --libs --static grassflow-static)
 *
 * (the second links libgrassflow.a; tests/project/install.sh runs both lines as written here).
 *
 *     ./train OUT_DIR [STEPS] [TEXT_FILE]
 *
 * prints the training loss as it falls and the validation loss before and after on stdout, and leaves
 * OUT_DIR/last.safetensors, best.safetensors, state.safetensors and metrics.jsonl. Without TEXT_FILE it
 * learns a short built-in text (the last tenth of the bytes is the validation split). The checkpoints
 * carry the byte tokenizer (gf_train_opts.tokenizer_json), so `grassflow generate --ckpt
 * OUT_DIR/best.safetensors --prompt "A Causal"` and `grassflow eval` read them as they read grassflow train's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow.h"

static const char builtin_text[] =
    "A Causal Grassmann layer pairs each token with the ones one, two, four, eight, twelve and sixteen "
    "places before it. It reduces both to a few numbers, takes the Pluecker coordinates of the plane the "
    "two vectors span, and gates what it finds into the hidden state. There is no attention matrix, and "
    "the cost grows with the length of the text, not with its square. A streaming engine keeps only the "
    "reduced vectors of the last sixteen positions, so a model can read a long book with the memory it "
    "needs for a line. The Transformer twin of each model has the same width, depth and feed-forward "
    "block, and attention in place of the Grassmann mixer, so that the two can be compared fairly.\n";

/* The bytes of path (or of the built-in text) as token ids. */
static int32_t *read_tokens(const char *path, int64_t *n) {
    const unsigned char *bytes = (const unsigned char *)builtin_text;
    size_t len = sizeof builtin_text - 1, reps = 6; /* the built-in text is short: read it several times */
    unsigned char *file = NULL;
    if (path) {
        FILE *f = fopen(path, "rb");
        if (!f || fseek(f, 0, SEEK_END) || (len = (size_t)ftell(f)) == 0 || fseek(f, 0, SEEK_SET) ||
            !(file = malloc(len)) || fread(file, 1, len, f) != len) {
            fprintf(stderr, "error: cannot read %s (expected a non-empty text file)\n", path);
            if (f) fclose(f);
            free(file);
            return NULL;
        }
        fclose(f);
        bytes = file;
        reps = 1;
    }
    int32_t *ids = malloc(len * reps * sizeof *ids);
    for (size_t i = 0; ids && i < len * reps; i++) ids[i] = bytes[i % len];
    free(file);
    *n = (int64_t)(len * reps);
    return ids;
}

static void on_event(const gf_train_event *e, void *ctx) {
    (void)ctx;
    if (e->kind == GF_EV_STEP)
        printf("step %4lld/%lld  loss %.4f  lr %.2e\n", (long long)e->step, (long long)e->total_steps, e->loss, e->lr);
    else if (e->kind == GF_EV_EVAL)
        printf("step %4lld  validation loss %.4f%s\n", (long long)e->step, e->val_loss, e->is_best ? " (best)" : "");
}

/* A tiny Grassmann model for bytes, initialised from seed. */
static gf_model *tiny_model(uint64_t seed) {
    gf_config cfg;
    if (gf_config_preset("grassmann-tiny", &cfg) || gf_config_set(&cfg, "vocab_size=256") ||
        gf_config_set(&cfg, "dropout=0"))
        return NULL;
    gf_model *m = gf_model_create(&cfg);
    if (m) gf_model_init(m, seed);
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s OUT_DIR [STEPS] [TEXT_FILE]\n", argv[0]);
        return 2;
    }
    const long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    if (steps < 1) {
        fprintf(stderr, "error: STEPS '%s' is not a positive number\n", argv[2]);
        return 2;
    }
    int64_t n;
    int32_t *ids = read_tokens(argc > 3 ? argv[3] : NULL, &n);
    if (!ids) return 1;
    const int64_t n_valid = n / 10, L = 32;
    gf_train_opts o;
    gf_train_opts_default(&o);
    o.steps = steps;
    o.batch = 8;
    o.warmup = 10;
    o.lr = 3e-3f;
    o.min_lr = 3e-4f;
    o.eval_every = steps / 4 > 0 ? steps / 4 : 1;
    o.log_every = steps / 10 > 0 ? steps / 10 : 1;
    if (strlen(argv[1]) >= sizeof o.out_dir) {
        fprintf(stderr, "error: OUT_DIR is longer than %zu bytes\n", sizeof o.out_dir - 1);
        return 2;
    }
    snprintf(o.out_dir, sizeof o.out_dir, "%s", argv[1]);
    /* what the run was made from, stored with its recipe (the sources below are what cut the blocks) */
    o.made_from_json = "{\"task\": \"lm\", \"model\": \"grassmann-tiny\", \"seq_len\": 32}";
    /* the tokenizer the ids are made with, stored in every checkpoint: generate and eval can then encode text */
    gf_tokenizer *bytes = gf_tokenizer_bytes();
    char *tok_json = bytes ? gf_tokenizer_to_json(bytes) : NULL;
    gf_tokenizer_free(bytes);
    o.tokenizer_json = tok_json;
    gf_model *m = tok_json ? tiny_model(o.seed) : NULL;
    gf_source *train = m ? gf_block_source_create(ids, n - n_valid, L, o.seed) : NULL;
    gf_source *valid = train ? gf_block_source_create(ids + n - n_valid, n_valid, L, o.seed) : NULL;
    double before = 0, after = 0;
    int rc = !valid || gf_evaluate(m, valid, o.batch, &before, NULL) ||
             gf_train(m, train, valid, &o, false, on_event, NULL, NULL) || gf_evaluate(m, valid, o.batch, &after, NULL);
    if (rc) fprintf(stderr, "error: %s\n", gf_last_error());
    else printf("validation loss %.4f -> %.4f; checkpoints in %s/\n", before, after, o.out_dir);
    gf_source_free(train);
    gf_source_free(valid);
    gf_model_free(m);
    free(tok_json);
    free(ids);
    return rc;
}
