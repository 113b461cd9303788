/* Embed a grassflow model in a program: load a checkpoint, feed a prompt one token at a time through
 * the streaming engine, then continue it greedily. Uses only the public API (include/grassflow.h).
 *
 * Built in the source tree by `make examples` (build/examples/stream_generate); against an installed grassflow
 * (make install; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if PREFIX is not a system one), from this folder:
 *
 *     cc -std=c11 -Wall -Wextra -O2 -o stream_generate stream_generate.c $(pkg-config --cflags --libs grassflow)
 *     cc -std=c11 -Wall -Wextra -O2 -o stream_generate-static stream_generate.c $(pkg-config --cflags --libs --static grassflow-static)
 *
 * (the second links libgrassflow.a; tests/project/install.sh runs both lines as written here).
 *
 *     ./stream_generate model.safetensors 200 5 17 3
 *
 * prints the generated token ids, one line, then on stderr the context state the stream held at the end:
 * for a Grassmann model it is the same after 10 tokens and after 10 million. */
#include <stdio.h>
#include <stdlib.h>

#include "grassflow.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s CHECKPOINT N_NEW PROMPT_ID [PROMPT_ID...]\n", argv[0]);
        return 2;
    }
    gf_model *m = gf_model_load(argv[1]);
    if (!m) {
        fprintf(stderr, "error: %s\n", gf_last_error());
        return 1;
    }
    const int64_t V = gf_model_config(m)->vocab_size;
    char *end;
    long n_new = strtol(argv[2], &end, 10);
    if (*end || n_new < 0) {
        fprintf(stderr, "error: N_NEW '%s' is not a count\n", argv[2]);
        gf_model_free(m);
        return 2;
    }
    gf_stream *s = gf_stream_create(m);
    if (!s) {
        fprintf(stderr, "error: %s\n", gf_last_error());
        gf_model_free(m);
        return 1;
    }
    const float *logits = NULL;
    for (int i = 3; i < argc; i++) { /* the prompt */
        long id = strtol(argv[i], &end, 10);
        if (*end || !(logits = gf_stream_step(s, (int32_t)id))) {
            fprintf(stderr, "error: prompt token '%s': %s\n", argv[i], *end ? "not a number" : gf_last_error());
            gf_stream_free(s);
            gf_model_free(m);
            return 1;
        }
    }
    int rc = 0;
    for (long i = 0; i < n_new; i++) { /* greedy continuation */
        int32_t best = 0;
        for (int64_t v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = (int32_t)v;
        printf("%s%d", i ? " " : "", best);
        if (!(logits = gf_stream_step(s, best))) {
            fprintf(stderr, "\nerror: %s\n", gf_last_error());
            rc = 1;
            break;
        }
    }
    printf("\n");
    fprintf(stderr, "positions %lld, stream state %zu bytes\n", (long long)gf_stream_pos(s), gf_stream_state_bytes(s));
    gf_stream_free(s);
    gf_model_free(m);
    return rc;
}
