/* grassflow score: mean next-token cross-entropy of a checkpoint on sequences of token ids. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: grassflow score --ckpt FILE --tokens FILE [--batch B] [--json]\n\n"
           "Score token ids: each line of the tokens file is one sequence of whitespace-separated ids\n"
           "(at most max_len + 1 of them); every id after the first is predicted from those before it.\n"
           "Prints the number of predicted tokens, the mean cross-entropy (nats) and its perplexity.\n\n"
           "  --ckpt FILE     a safetensors checkpoint (grassflow init / train)\n"
           "  --tokens FILE   token ids, one sequence per line (blank lines are skipped)\n"
           "  --batch B       sequences per forward pass (default 16; fewer when their activations would\n"
           "                  pass 256 MiB; a line that alone does not fit is scored token by token by\n"
           "                  the streaming engine, with the same result)\n"
           "  --json          print {\"tokens\": N, \"loss\": X, \"ppl\": Y} (a number that is not finite: null)\n");
}

typedef struct {
    int32_t *ids;
    int64_t n, cap;
    int64_t *start; /* per sequence: offset into ids; start[n_seq] = n */
    int64_t n_seq, seq_cap;
} seqs;

static int push(void **p, int64_t *cap, int64_t need, size_t el) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap * 2 : 1024;
    while (nc < need) nc *= 2;
    void *np = realloc(*p, (size_t)nc * el);
    if (!np) return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Whitespace between ids within a line (C's isspace without the newline that ends the line). */
static bool is_sep(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Parse the tokens file; every id must be in [0, V) and every line at most max_len + 1 ids. */
static int read_tokens(const char *path, const gf_config *cfg, seqs *s) {
    size_t size;
    char *buf = (char *)gf_read_file(path, (size_t)1 << 36, &size);
    if (!buf) return cli_error("%s", gf_last_error());
    const char *nul = memchr(buf, '\0', size);
    if (nul) {
        int64_t at = 1;
        for (const char *q = buf; q < nul; q++) at += *q == '\n';
        free(buf);
        return cli_error("%s:%lld: a NUL byte; expected whitespace-separated token ids", path, (long long)at);
    }
    int64_t line = 0;
    char *p = buf, *end = buf + size;
    int rc = EXIT_OK;
    while (p < end && rc == EXIT_OK) {
        line++;
        char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        int64_t begin = s->n;
        char *q = p;
        while (q < eol) {
            while (q < eol && is_sep(*q)) q++;
            if (q >= eol) break;
            char *e;
            errno = 0;
            long long v = strtoll(q, &e, 10);
            if (e == q || errno || (e < eol && !is_sep(*e))) {
                int tl = 0;
                while (q + tl < eol && tl < 20 && !is_sep(q[tl])) tl++;
                rc = cli_error("%s:%lld: '%.*s' is not a token id; expected whitespace-separated integers", path,
                               (long long)line, tl, q);
                break;
            }
            if (v < 0 || v >= cfg->vocab_size) {
                rc = cli_error("%s:%lld: token id %lld is outside the model's vocabulary [0, %lld)", path,
                               (long long)line, v, (long long)cfg->vocab_size);
                break;
            }
            if (push((void **)&s->ids, &s->cap, s->n + 1, sizeof(int32_t))) {
                rc = cli_error("out of memory reading %s", path);
                break;
            }
            s->ids[s->n++] = (int32_t)v;
            q = e;
        }
        int64_t len = s->n - begin;
        if (rc == EXIT_OK && len > cfg->max_len + 1 && cfg->pos == GF_POS_LEARNED) {
            rc = cli_error("%s:%lld: %lld ids; this model takes at most max_len + 1 = %lld per line\nHINT: split "
                           "long sequences into lines of at most %lld ids", path, (long long)line, (long long)len,
                           (long long)(cfg->max_len + 1), (long long)(cfg->max_len + 1));
        }
        if (rc == EXIT_OK && len >= 2) {
            if (push((void **)&s->start, &s->seq_cap, s->n_seq + 2, sizeof(int64_t))) {
                rc = cli_error("out of memory reading %s", path);
            } else {
                s->start[s->n_seq++] = begin;
                s->start[s->n_seq] = s->n;
            }
        } else {
            s->n = begin; /* a line of 0 or 1 ids predicts nothing */
        }
        p = eol + 1;
    }
    free(buf);
    return rc;
}

/* One forward over sequences [i0, i0 + nb) of s, each padded to the longest (T) with ignored targets. */
static int score_batch(gf_model *m, const seqs *s, int64_t i0, int64_t nb, int64_t T, double *total,
                       int64_t *counted) {
    int32_t *in = malloc((size_t)(nb * T) * sizeof *in), *tg = malloc((size_t)(nb * T) * sizeof *tg);
    int rc = EXIT_OK;
    if (!in || !tg) rc = cli_error("out of memory for a batch of %lld x %lld", (long long)nb, (long long)T);
    int64_t here = 0;
    for (int64_t b = 0; rc == EXIT_OK && b < nb; b++) {
        const int32_t *ids = s->ids + s->start[i0 + b];
        int64_t len = s->start[i0 + b + 1] - s->start[i0 + b] - 1;
        for (int64_t t = 0; t < T; t++) {
            in[b * T + t] = t < len ? ids[t] : 0;      /* padding after the end cannot affect what precedes */
            tg[b * T + t] = t < len ? ids[t + 1] : -1; /* and is not scored */
        }
        here += len;
    }
    float loss;
    if (rc == EXIT_OK && gf_model_forward(m, in, tg, nb, T, &loss)) rc = cli_error("%s", gf_last_error());
    if (rc == EXIT_OK) {
        *total += (double)loss * (double)here;
        *counted += here;
    }
    free(in);
    free(tg);
    return rc;
}

/* A line too long for one forward within the budget, scored token by token by the streaming engine: the
 * same numbers, in memory that does not grow with the line for Grassmann layers. */
static int score_streamed(gf_model *m, const seqs *s, int64_t i, double *total, int64_t *counted) {
    gf_stream *st = gf_stream_create(m);
    const int32_t *ids = s->ids + s->start[i];
    const int64_t len = s->start[i + 1] - s->start[i] - 1;
    int rc = st && !gf_stream_score(st, ids, ids + 1, len, total, counted) ? EXIT_OK : cli_error("%s", gf_last_error());
    gf_stream_free(st);
    return rc;
}

/* The token-weighted loss of m over every sequence of s: up to `batch` sequences per forward pass while
 * the forward's activations stay within SCORE_BUDGET (or a quarter of the memory the process can have, if
 * less); a sequence that alone does not fit goes through the streaming engine. The input decides the
 * length here, so the budget is fixed: a long line costs time, not memory. */
#define SCORE_BUDGET ((uint64_t)256 << 20)
static int score_all(gf_model *m, const seqs *s, int64_t batch, double *total, int64_t *counted) {
    const size_t budget = (size_t)(gf_mem_limit() / 4 < SCORE_BUDGET ? gf_mem_limit() / 4 : SCORE_BUDGET);
    int rc = EXIT_OK;
    for (int64_t i0 = 0; rc == EXIT_OK && i0 < s->n_seq;) {
        int64_t nb = 0, T = 0;
        while (i0 + nb < s->n_seq && nb < batch) {
            int64_t len = s->start[i0 + nb + 1] - s->start[i0 + nb] - 1, T2 = len > T ? len : T;
            if (gf_model_forward_bytes(m, nb + 1, T2) > budget) break;
            T = T2;
            nb++;
        }
        if (nb == 0) {
            rc = score_streamed(m, s, i0, total, counted);
            i0++;
        } else {
            rc = score_batch(m, s, i0, nb, T, total, counted);
            i0 += nb;
        }
    }
    return rc;
}

int cmd_score(int argc, char **argv) {
    static const struct option longopts[] = {{"ckpt", required_argument, 0, 'c'}, {"tokens", required_argument, 0, 't'},
                                             {"batch", required_argument, 0, 'b'}, {"json", no_argument, 0, 'j'},
                                             {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *ckpt = NULL, *tokens = NULL;
    int64_t batch = 16;
    int json = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'c') ckpt = optarg;
        else if (opt == 't') tokens = optarg;
        else if (opt == 'b') {
            int rc = cli_parse_i64("score", "--batch", optarg, 1, 1 << 20, &batch);
            if (rc) return rc;
        } else if (opt == 'j') json = 1;
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("score", "unknown option");
    }
    if (optind < argc) return cli_usage_error("score", "unexpected argument '%s'", argv[optind]);
    if (!ckpt || !tokens) return cli_usage_error("score", "--ckpt FILE and --tokens FILE are required");

    gf_tokenizer *tok = NULL; /* score reads ids: a stored tokenizer is not needed */
    gf_model *m = cli_load_checkpoint(ckpt, &tok, NULL);
    gf_tokenizer_free(tok);
    if (!m) return cli_error("%s", gf_last_error());
    if (!gf_model_predicts_next_token(m)) {
        int rc = cli_error("%s: score predicts each next token, so it needs a language model (head next_token); "
                           "this checkpoint's head is %s", ckpt, gf_model_config(m)->head_kind);
        gf_model_free(m);
        return rc;
    }
    const gf_config *cfg = gf_model_config(m);
    if (cfg->source_vocab > 0) {
        int rc = cli_error("%s is an encoder-decoder (its decoder reads a source besides its own tokens); score takes "
                           "a language model's token ids\nHINT: grassflow eval --ckpt %s --corpus LEXICON scores it "
                           "(its loss, and WER and PER of its decodings)", ckpt, ckpt);
        gf_model_free(m);
        return rc;
    }
    seqs s = {0};
    int rc = read_tokens(tokens, cfg, &s);
    double total = 0.0;
    int64_t counted = 0;
    if (rc == EXIT_OK) rc = score_all(m, &s, batch, &total, &counted);
    if (rc == EXIT_OK) {
        if (counted == 0) {
            rc = cli_error("%s: no line has two or more token ids, so nothing can be predicted", tokens);
        } else {
            double mean = total / (double)counted;
            char pb[32];
            if (json) printf("{\"tokens\": %lld, \"loss\": %s, \"ppl\": %s}\n", (long long)counted,
                             gf_json_num(mean, 'g', 9).s, gf_json_num(exp(mean), 'g', 9).s); /* not finite: null */
            else printf("tokens %lld  loss %.6f  ppl %s\n", (long long)counted, mean, cli_ppl(pb, sizeof pb, exp(mean), 4));
            cli_warn_ppl(exp(mean), cfg->vocab_size);
        }
    }
    free(s.ids);
    free(s.start);
    gf_model_free(m);
    return rc;
}
