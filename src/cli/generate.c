/* grassflow generate: sample text from a checkpoint, with the streaming engine (constant work per token
 * for Grassmann layers, a KV cache for attention) or, with --no-cache, by recomputing the window. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rng.h"
#include "data/tokenizer.h"

static void help(void) {
    printf("usage: grassflow generate --ckpt FILE [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K]\n"
           "                          [--top-p P] [--seed S] [--stream] [--no-cache]\n\n"
           "Continue the prompt with N sampled tokens and print prompt + continuation to stdout.\n"
           "Tokens go through the streaming engine: each Grassmann layer keeps the last max-offset reduced\n"
           "vectors, each attention layer a KV cache. With pos none or sinusoidal there is no length limit;\n"
           "with learned positions the context is the last max_len tokens.\n\n"
           "  --ckpt FILE        a checkpoint from grassflow train (it carries its tokenizer)\n"
           "  --prompt TEXT      the text to continue (default: empty)\n"
           "  --tokens N         tokens to generate (default 50)\n"
           "  --temperature T    softmax temperature (default 1.0; 0 = greedy)\n"
           "  --top-k K          sample among the K most likely tokens only (default 0 = all)\n"
           "  --top-p P          sample from the smallest set of tokens with probability >= P (default 1.0)\n"
           "  --seed S           sampling seed (default 1234)\n"
           "  --stream           print each token as soon as it is sampled\n"
           "  --no-cache         recompute the whole context for every token instead of streaming (slow; for\n"
           "                     checking: greedy output is the same both ways)\n");
}

typedef struct {
    float p;
    int32_t id;
} cand;

static int by_p_desc(const void *a, const void *b) {
    float x = ((const cand *)a)->p, y = ((const cand *)b)->p;
    if (x != y) return x < y ? 1 : -1;
    return ((const cand *)a)->id - ((const cand *)b)->id;
}

/* Pick the next token from logits (V). */
static int32_t sample(const float *logits, int64_t V, double temperature, int64_t top_k, double top_p, uint64_t key,
                      uint64_t counter, cand *buf) {
    if (temperature <= 0.0) {
        int64_t best = 0;
        for (int64_t v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = v;
        return (int32_t)best;
    }
    float mx = logits[0];
    for (int64_t v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    for (int64_t v = 0; v < V; v++) {
        buf[v].p = expf((float)((logits[v] - mx) / temperature));
        buf[v].id = (int32_t)v;
    }
    qsort(buf, (size_t)V, sizeof *buf, by_p_desc);
    int64_t n = top_k > 0 && top_k < V ? top_k : V;
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += buf[i].p;
    if (top_p < 1.0) {
        double acc = 0.0;
        int64_t keep = 0;
        while (keep < n) {
            acc += buf[keep++].p / total;
            if (acc >= top_p) break;
        }
        n = keep;
        total = 0.0;
        for (int64_t i = 0; i < n; i++) total += buf[i].p;
    }
    double u = (double)gf_uniform(key, counter) * total, acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += buf[i].p;
        if (u < acc) return buf[i].id;
    }
    return buf[n - 1].id;
}

int cmd_generate(int argc, char **argv) {
    static const struct option longopts[] = {{"ckpt", 1, 0, 'c'},  {"prompt", 1, 0, 'p'}, {"tokens", 1, 0, 'n'},
                                             {"temperature", 1, 0, 'T'}, {"top-k", 1, 0, 'k'}, {"top-p", 1, 0, 'P'},
                                             {"seed", 1, 0, 's'},  {"stream", 0, 0, 'S'}, {"no-cache", 0, 0, 'N'},
                                             {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
    const char *ckpt = NULL, *prompt = "";
    int64_t n_new = 50, top_k = 0, seed = 1234;
    double temperature = 1.0, top_p = 1.0;
    int opt, rc, stream_out = 0, no_cache = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': ckpt = optarg; break;
        case 'p': prompt = optarg; break;
        case 'n': if ((rc = cli_parse_i64("generate", "--tokens", optarg, 0, 1 << 24, &n_new))) return rc; break;
        case 'T': if ((rc = cli_parse_f("generate", "--temperature", optarg, 0, 100, &temperature))) return rc; break;
        case 'k': if ((rc = cli_parse_i64("generate", "--top-k", optarg, 0, INT32_MAX, &top_k))) return rc; break;
        case 'P': if ((rc = cli_parse_f("generate", "--top-p", optarg, 1e-9, 1, &top_p))) return rc; break;
        case 's': if ((rc = cli_parse_i64("generate", "--seed", optarg, 0, INT64_MAX, &seed))) return rc; break;
        case 'S': stream_out = 1; break;
        case 'N': no_cache = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage_error("generate", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("generate", "unexpected argument '%s'", argv[optind]);
    if (!ckpt) return cli_usage_error("generate", "--ckpt FILE is required");
    gf_tokenizer *tok = NULL;
    gf_model *m = cli_load_checkpoint(ckpt, &tok, NULL);
    if (!m) return cli_error("%s", gf_last_error());
    if (!tok) {
        gf_model_free(m);
        return cli_error("%s has no tokenizer (it was not made by grassflow train), so text cannot be encoded", ckpt);
    }
    const gf_config *cfg = gf_model_config(m);
    const int64_t V = cfg->vocab_size, W = cfg->max_len;
    gf_ids ids = {0};
    rc = EXIT_OK;
    size_t plen = strlen(prompt);
    if (gf_tokenize(tok, prompt, plen, "--prompt", &ids)) {
        rc = cli_error("%s", gf_last_error());
        goto done;
    }
    /* a word prompt gets <eos> at its end like every line; continue the line instead */
    if (tok->kind == GF_TOK_WORD && ids.n > 0 && (plen == 0 || prompt[plen - 1] != '\n')) ids.n--;
    if (ids.n == 0) {
        int32_t start = tok->eos_id >= 0 ? tok->eos_id : 0;
        if (tok->kind == GF_TOK_CHAR || tok->kind == GF_TOK_BYTE) {
            int32_t nl = gf_vocab_find(&tok->vocab, "\n", 1);
            if (nl >= 0) start = nl;
        }
        if (gf_ids_push(&ids, start)) { rc = cli_error("%s", gf_last_error()); goto done; }
    }
    cand *buf = malloc((size_t)V * sizeof *buf);
    gf_stream *st = no_cache ? NULL : gf_stream_create(m);
    if (!buf || (!no_cache && !st)) {
        free(buf);
        rc = cli_error("%s", no_cache || st ? "out of memory" : gf_last_error());
        goto done;
    }
    const bool learned = cfg->pos == GF_POS_LEARNED;
    const int64_t n_prompt = ids.n;
    const uint64_t key = gf_key((uint64_t)seed, 0x5A3D1E);
    int64_t fed = 0, start = 0; /* the stream has consumed ids[start .. fed) */
    size_t printed = 0;
    const char *sep = (tok->kind == GF_TOK_WORD || tok->kind == GF_TOK_WORDPIECE) && plen > 0 &&
                              prompt[plen - 1] != '\n' ? " " : "";
    if (stream_out) {
        printf("%s", prompt);
        fflush(stdout);
    }
    for (int64_t i = 0; i < n_new && rc == EXIT_OK; i++) {
        const float *last;
        if (no_cache) { /* the whole context (the last max_len tokens with learned positions) */
            int64_t T = learned && ids.n > W ? W : ids.n;
            if (gf_model_forward(m, ids.v + ids.n - T, NULL, 1, T, NULL)) {
                rc = cli_error("%s", gf_last_error());
                break;
            }
            last = gf_model_logits(m) + (T - 1) * V;
        } else {
            if (learned && ids.n - start > W) { /* learned positions end at max_len: slide the window */
                if (start == 0)
                    fprintf(stderr, "generate: past max_len %lld with learned positions, each token re-reads the "
                                    "last %lld tokens (a model with pos none or sinusoidal streams at constant "
                                    "cost)\n", (long long)W, (long long)W);
                gf_stream_reset(st);
                start = fed = ids.n - W;
            }
            /* the context without logits, then the last token with them */
            last = NULL;
            if (gf_stream_feed(st, ids.v + fed, ids.n - 1 - fed) == 0) last = gf_stream_step(st, ids.v[ids.n - 1]);
            fed = ids.n;
            if (!last) {
                rc = cli_error("%s", gf_last_error());
                break;
            }
        }
        int32_t next = sample(last, V, temperature, top_k, top_p, key, (uint64_t)i, buf);
        if (gf_ids_push(&ids, next)) rc = cli_error("%s", gf_last_error());
        if (stream_out && rc == EXIT_OK) { /* print what the continuation's text gained */
            char *cont = gf_detokenize(tok, ids.v + n_prompt, ids.n - n_prompt);
            if (!cont) { rc = cli_error("out of memory"); break; }
            size_t len = strlen(cont);
            if (printed == 0 && len > 0 && cont[0] != '\n') printf("%s", sep);
            if (len > printed) printf("%s", cont + printed);
            printed = len > printed ? len : printed;
            fflush(stdout);
            free(cont);
        }
    }
    free(buf);
    gf_stream_free(st);
    if (rc == EXIT_OK && stream_out) {
        printf("\n");
    } else if (rc == EXIT_OK) {
        /* the prompt as given, then the continuation */
        char *cont = gf_detokenize(tok, ids.v + n_prompt, ids.n - n_prompt);
        if (!cont) { rc = cli_error("out of memory"); goto done; }
        printf("%s%s%s\n", prompt, cont[0] && cont[0] != '\n' ? sep : "", cont);
        free(cont);
    }
done:
    gf_ids_free(&ids);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
