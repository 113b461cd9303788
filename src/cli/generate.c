/* grassflow generate: sample text from a checkpoint, with the streaming engine (constant work per token
 * for Grassmann layers, a KV cache for attention) or, with --no-cache, by recomputing the window. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: grassflow generate --ckpt FILE [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K]\n"
           "                          [--top-p P] [--seed S] [--stream] [--no-cache] [--weights W]\n\n"
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
           "  --seed S           sampling seed (default 1234; --top-k, --top-p and --seed need a temperature\n"
           "                     above 0: at 0 nothing is sampled)\n"
           "  --stream           print each token as soon as it is sampled\n"
           "  --no-cache         recompute the whole context for every token instead of streaming (slow; for\n"
           "                     checking: greedy output is the same both ways)\n"
           "  --weights W        the weight matrices as fp32 (default), bf16 or int8 (a scale per row; the\n"
           "                     streaming matmuls then run on int8: AVX512_VNNI, or AVX2): rounded on load, the\n"
           "                     file is not changed (grassflow quantize writes such a checkpoint)\n");
}

/* Where the next-token logits come from: the stream (gf_stream_next) or, with --no-cache, a forward over the
 * whole context. */
typedef struct gen_ctx {
    gf_model *m;
    gf_stream *st;        /* NULL with --no-cache */
    bool noted;           /* said that learned positions made it slide its window */
} gen_ctx;

/* The logits (V) after ids (n), or NULL (gf_last_error). */
static const float *next_logits(gen_ctx *g, const int32_t *ids, int64_t n) {
    const gf_config *cfg = gf_model_config(g->m);
    const int64_t V = cfg->vocab_size, W = cfg->max_len;
    const bool learned = cfg->pos == GF_POS_LEARNED;
    if (!g->st) { /* the whole context (the last max_len tokens with learned positions) */
        int64_t T = learned && n > W ? W : n;
        if (gf_model_forward(g->m, ids + n - T, NULL, 1, T, NULL)) return NULL;
        return gf_model_logits(g->m) + (T - 1) * V;
    }
    if (learned && n > W && !g->noted) {
        fprintf(stderr, "generate: past max_len %lld with learned positions, each token re-reads the last %lld "
                        "tokens (a model with pos none or sinusoidal streams at constant cost)\n",
                (long long)W, (long long)W);
        g->noted = true;
    }
    return gf_stream_next(g->st, ids, n);
}

static void put(const char *s, size_t n) { fwrite(s, 1, n, stdout); }

/* The token ids so far: the prompt's, then each one sampled. */
typedef struct {
    int32_t *v;
    int64_t n, cap;
} id_list;

static int push_id(id_list *a, int32_t id) {
    if (a->n == a->cap) {
        int64_t nc = a->cap ? a->cap * 2 : 4096;
        int32_t *nv = realloc(a->v, (size_t)nc * sizeof *nv);
        if (!nv) return gf_fail("out of memory collecting token ids");
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = id;
    return 0;
}

/* Sample n_new tokens after ids; print the prompt and the text (as it comes with stream_out). */
static int generate(gen_ctx *g, const gf_tokenizer *tok, const char *prompt, id_list *ids, int64_t n_new,
                    gf_sampler *smp, bool stream_out) {
    const int64_t n_prompt = ids->n;
    gf_detok *d = gf_detok_create(tok, prompt, strlen(prompt));
    if (!d) return cli_error("%s", gf_last_error());
    int rc = EXIT_OK;
    size_t len;
    const char *piece;
    if (stream_out) {
        put(prompt, strlen(prompt));
        if (cli_stdout_failed()) rc = EXIT_RUNTIME; /* nobody reads the text (a closed pipe, a full disk): stop */
    }
    for (int64_t i = 0; i < n_new && rc == EXIT_OK; i++) {
        const float *last = next_logits(g, ids->v, ids->n);
        int32_t next = last ? gf_sampler_sample(smp, last) : -1;
        if (next < 0 || push_id(ids, next)) {
            rc = cli_error("%s", gf_last_error());
        } else if (stream_out) { /* the text this token adds */
            piece = gf_detok_push(d, next, &len);
            put(piece, len);
            if (cli_stdout_failed()) rc = EXIT_RUNTIME; /* the flush each token needs anyway */
        }
    }
    if (rc == EXIT_OK && !stream_out) { /* the prompt as given, then the continuation */
        put(prompt, strlen(prompt));
        for (int64_t i = n_prompt; i < ids->n; i++) {
            piece = gf_detok_push(d, ids->v[i], &len);
            put(piece, len);
        }
    }
    if (rc == EXIT_OK) {
        piece = gf_detok_flush(d, &len);
        put(piece, len);
        printf("\n");
    }
    gf_detok_free(d);
    return rc;
}

/* A checkpoint without a tokenizer (grassflow init's, or a program's that stored none): text cannot be encoded. */
static int no_tokenizer(const char *ckpt) {
    return cli_error("%s has no tokenizer (it was not made by grassflow train), so text cannot be encoded\nHINT: a "
                     "program that trains through the library stores one in every checkpoint with "
                     "gf_train_opts.tokenizer_json = gf_tokenizer_to_json(tok) (examples/train.c does); grassflow "
                     "train stores its own; grassflow eval --tokenizer T scores a checkpoint without one", ckpt);
}

int cmd_generate(int argc, char **argv) {
    static const struct option longopts[] = {{"ckpt", 1, 0, 'c'},  {"prompt", 1, 0, 'p'}, {"tokens", 1, 0, 'n'},
                                             {"temperature", 1, 0, 'T'}, {"top-k", 1, 0, 'k'}, {"top-p", 1, 0, 'P'},
                                             {"seed", 1, 0, 's'},  {"stream", 0, 0, 'S'}, {"no-cache", 0, 0, 'N'},
                                             {"weights", 1, 0, 'W'}, {"help", 0, 0, 'h'},   {0, 0, 0, 0}};
    const char *ckpt = NULL, *prompt = "";
    gf_weights weights = GF_WEIGHTS_FP32;
    int weights_given = 0;
    int64_t n_new = 50, top_k = 0, seed = 1234;
    double temperature = 1.0, top_p = 1.0;
    int opt, rc, stream_out = 0, no_cache = 0;
    const char *sampling = NULL; /* a flag of sampling given: --top-k, --top-p or --seed */
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'k' || opt == 'P' || opt == 's') /* the sampling flags */
            sampling = opt == 'k' ? "--top-k" : opt == 'P' ? "--top-p" : "--seed";
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
        case 'W': if ((rc = cli_weights_option("generate", optarg, &weights))) return rc; weights_given = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage_error("generate", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("generate", "unexpected argument '%s'", argv[optind]);
    if (!ckpt) return cli_usage_error("generate", "--ckpt FILE is required");
    if (sampling && temperature == 0)
        return cli_usage_error("generate", "%s does not apply with --temperature 0: that is greedy decoding, the most "
                               "likely token every time, with nothing sampled\nHINT: drop %s, or give a temperature "
                               "above 0", sampling, sampling);
    gf_tokenizer *tok = NULL;
    gf_model *m = cli_load_checkpoint(ckpt, &tok, NULL);
    if (!m) return cli_error("%s", gf_last_error());
    if (weights_given && (rc = cli_set_weights(m, weights, ckpt))) {
        gf_tokenizer_free(tok);
        gf_model_free(m);
        return rc;
    }
    if (!gf_model_predicts_next_token(m)) {
        int rc = cli_error("%s: generate needs a language model (head next_token); this checkpoint's head is %s", ckpt,
                           gf_model_config(m)->head_kind);
        gf_tokenizer_free(tok);
        gf_model_free(m);
        return rc;
    }
    if (!tok) {
        gf_model_free(m);
        return no_tokenizer(ckpt);
    }
    id_list ids = {0};
    gen_ctx g = {.m = m};
    gf_sampler *smp = NULL;
    gf_sampler_params sp = {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = (uint64_t)seed};
    if (gf_tokenizer_encode_prompt(tok, prompt, strlen(prompt), "--prompt", &ids.v, &ids.n) ||
        !(smp = gf_sampler_create(gf_model_config(m)->vocab_size, sp)) ||
        (!no_cache && !(g.st = gf_stream_create(m)))) {
        rc = cli_error("%s", gf_last_error());
    } else {
        ids.cap = ids.n;
        rc = generate(&g, tok, prompt, &ids, n_new, smp, stream_out);
    }
    gf_stream_free(g.st);
    gf_sampler_free(smp);
    free(ids.v);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
