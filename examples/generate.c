/* Text generation from C with the public API alone (include/grassflow.h): load a checkpoint with its
 * tokenizer, encode a prompt, run it through the streaming engine, sample with the library's sampler and
 * print each token's text as it comes with the incremental detokeniser. Prints what
 * `grassflow generate --stream` prints for the same arguments.
 *
 * Built in the source tree by `make examples` (build/examples/generate); against an installed grassflow
 * (make install; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if PREFIX is not a system one), from this folder:
 *
 *     cc -std=c11 -Wall -Wextra -O2 -o generate generate.c $(pkg-config --cflags --libs grassflow)
 *     cc -std=c11 -Wall -Wextra -O2 -o generate-static generate.c $(pkg-config --cflags --libs --static grassflow-static)
 *
 * (the second links libgrassflow.a; tests/project/install.sh runs both lines as written here).
 *
 *     ./generate runs/g6/best.safetensors "The history of" 50 0.8 40 0.95 1234
 *
 * Arguments: CHECKPOINT PROMPT N_TOKENS [TEMPERATURE [TOP_K [TOP_P [SEED]]]] (defaults 1.0, 0 = all,
 * 1.0 = all, 1234; temperature 0 is greedy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grassflow.h"

/* Parse argv[i] as a number (integer: a non-negative integer) into *out, kept when argc <= i; 0, or -1
 * with a message. */
static int arg_num(int argc, char **argv, int i, const char *what, double *out) {
    if (argc <= i) return 0;
    char *end;
    *out = strtod(argv[i], &end);
    if (*end || end == argv[i]) {
        fprintf(stderr, "error: %s '%s' is not a number\n", what, argv[i]);
        return -1;
    }
    return 0;
}
static int arg_int(int argc, char **argv, int i, const char *what, long long *out) {
    if (argc <= i) return 0;
    char *end;
    *out = strtoll(argv[i], &end, 10);
    if (*end || end == argv[i] || *out < 0) {
        fprintf(stderr, "error: %s '%s' is not a non-negative integer\n", what, argv[i]);
        return -1;
    }
    return 0;
}

/* Generate n_new tokens after ids (n; room for n + n_new), printing their text. */
static int run(gf_model *m, const gf_tokenizer *tok, const char *prompt, int32_t *ids, int64_t n, long n_new,
               gf_sampler *smp) {
    gf_stream *s = gf_stream_create(m);
    gf_detok *d = gf_detok_create(tok, prompt, strlen(prompt));
    size_t len;
    const char *text;
    int rc = s && d ? 0 : 1;
    if (rc == 0) fputs(prompt, stdout);
    for (long i = 0; i < n_new && rc == 0; i++) {
        /* the logits after ids: the stream is fed what it has not seen (past max_len with learned positions,
         * the last max_len tokens again) */
        const float *logits = gf_stream_next(s, ids, n);
        int32_t next = logits ? gf_sampler_sample(smp, logits) : -1;
        if (next < 0) {
            rc = 1;
            break;
        }
        ids[n++] = next;
        text = gf_detok_push(d, next, &len);
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    if (rc == 0) {
        text = gf_detok_flush(d, &len);
        fwrite(text, 1, len, stdout);
        printf("\n");
    } else {
        fprintf(stderr, "\nerror: %s\n", gf_last_error());
    }
    gf_detok_free(d);
    gf_stream_free(s);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 8) {
        fprintf(stderr, "usage: %s CHECKPOINT PROMPT N_TOKENS [TEMPERATURE [TOP_K [TOP_P [SEED]]]]\n", argv[0]);
        return 2;
    }
    long long n_new = 0, top_k = 0, seed = 1234;
    double temperature = 1.0, top_p = 1.0;
    if (arg_int(argc, argv, 3, "N_TOKENS", &n_new) || arg_num(argc, argv, 4, "TEMPERATURE", &temperature) ||
        arg_int(argc, argv, 5, "TOP_K", &top_k) || arg_num(argc, argv, 6, "TOP_P", &top_p) ||
        arg_int(argc, argv, 7, "SEED", &seed))
        return 2;
    if (n_new > 10000000) {
        fprintf(stderr, "error: N_TOKENS %s: expected at most 10000000\n", argv[3]);
        return 2;
    }
    gf_tokenizer *tok = NULL;
    gf_model *m = gf_checkpoint_load(argv[1], &tok, NULL);
    if (m && !tok) fprintf(stderr, "error: %s has no tokenizer (it was not made by grassflow train)\n", argv[1]);
    else if (!m) fprintf(stderr, "error: %s\n", gf_last_error());
    if (!m || !tok) {
        gf_model_free(m);
        return 1;
    }
    gf_sampler_params sp = {.temperature = temperature, .top_k = top_k, .top_p = top_p,
                            .seed = (uint64_t)seed};
    gf_sampler *smp = gf_sampler_create(gf_model_config(m)->vocab_size, sp);
    int32_t *prompt_ids = NULL, *ids = NULL;
    int64_t n = 0;
    int rc = 1;
    if (!smp || gf_tokenizer_encode_prompt(tok, argv[2], strlen(argv[2]), "PROMPT", &prompt_ids, &n))
        fprintf(stderr, "error: %s\n", gf_last_error());
    else if (!(ids = malloc((size_t)(n + (int64_t)n_new) * sizeof *ids)))
        fprintf(stderr, "error: out of memory for %lld token ids\n", (long long)(n + (int64_t)n_new));
    else
        rc = run(m, tok, argv[2], memcpy(ids, prompt_ids, (size_t)n * sizeof *ids), n, (long)n_new, smp);
    free(ids);
    free(prompt_ids);
    gf_sampler_free(smp);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
