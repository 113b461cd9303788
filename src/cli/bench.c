/* grassflow bench: throughput of training, of the mixers alone, and of generation, with the machine's
 * measured sgemm peak beside the achieved matmul FLOP/s. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/blas.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "mixers/mixer.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best-of-3 sgemm at n = 2048 (GFLOP/s): the ceiling our utilisation is measured against. */
static double sgemm_peak(void) {
    const int64_t n = 2048;
    float *a = malloc((size_t)(n * n) * sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b),
          *c = malloc((size_t)(n * n) * sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return NAN;
    }
    for (int64_t i = 0; i < n * n; i++) a[i] = b[i] = 0.001f * (float)(i % 1000);
    double best = 0.0;
    for (int r = 0; r < 4; r++) {
        double t0 = now_s();
        gf_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double g = 2.0 * n * n * n / (now_s() - t0) / 1e9;
        if (r > 0 && g > best) best = g; /* the first call warms up */
    }
    free(a), free(b), free(c);
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v). On a shared machine the median step is what a user sees most often: it
 * ignores the steps another tenant slowed down, without crediting a lucky one. */
static double median(double *v, int64_t n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill_tokens(int32_t *x, int64_t n, int64_t V, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(gf_rand64(seed, (uint64_t)i) % (uint64_t)V);
}

static void machine_json(FILE *f, double peak) {
    fprintf(f, "\"blas_kernel\": \"%s\", \"threads\": %d, \"sgemm_peak_gflops\": %.1f", gf_blas_kernel(),
            gf_max_threads(), peak);
}

/* ---- bench train ------------------------------------------------------------------------------------------- */

static int bench_train(int argc, char **argv) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, {"batch", 1, 0, 'b'}, {"seq-len", 1, 0, 'L'},
                                             {"steps", 1, 0, 'n'}, {"json", 0, 0, 'j'},
                                             {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    int64_t B = 8, L = 128, steps = 5;
    int json = 0, opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int h = cli_model_option(&mo, "bench train", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        switch (opt) {
        case 'b': if ((rc = cli_parse_i64("bench train", "--batch", optarg, 1, 1 << 16, &B))) return rc; break;
        case 'L': if ((rc = cli_parse_i64("bench train", "--seq-len", optarg, 1, 1 << 20, &L))) return rc; break;
        case 'n': if ((rc = cli_parse_i64("bench train", "--steps", optarg, 1, 1 << 20, &steps))) return rc; break;
        case 'j': json = 1; break;
        case 'h':
            printf("usage: grassflow bench train (--model P | --config F) [--vocab V] [--set K=V]... [--batch B]\n"
                   "                            [--seq-len L] [--steps N] [--json]\n\n"
                   "Time full training steps (forward, backward, AdamW) on random tokens after one warm-up step.\n"
                   "Reports tokens/s and the time of each phase (medians over the steps), the matmul FLOPs\n"
                   "actually issued per step, the achieved GFLOP/s and the sgemm peak measured in the same run. --vocab defaults to 33278\n"
                   "(WikiText-2 words).\n");
            return EXIT_OK;
        default: return cli_usage_error("bench train", "unknown option");
        }
    }
    if (!mo.vocab && mo.preset) mo.vocab = 33278; /* a config file keeps its own */
    gf_config cfg;
    if ((rc = cli_model_config(&mo, "bench train", &cfg))) return rc;
    gf_model *m = gf_model_create(&cfg);
    if (!m) return cli_error("%s", gf_last_error());
    gf_model_init(m, 1);
    gf_adamw *opt_ = gf_adamw_create(m, (gf_adamw_hparams){6e-4f, 0.9f, 0.95f, 1e-8f, 0.01f});
    int32_t *in = malloc((size_t)(B * L) * sizeof *in), *tg = malloc((size_t)(B * L) * sizeof *tg);
    double *ts = malloc((size_t)(4 * steps) * sizeof *ts), *tfs = ts + steps, *tbs = tfs + steps, *tos = tbs + steps;
    if (!opt_ || !in || !tg || !ts) return cli_error("out of memory");
    fill_tokens(in, B * L, cfg.vocab_size, 1);
    fill_tokens(tg, B * L, cfg.vocab_size, 2);
    double peak = sgemm_peak();
    uint64_t flops = 0;
    float loss = 0;
    gf_model_set_training(m, true, 1, 0);
    for (int64_t s = -1; s < steps; s++) {
        if (s == 0) gf_blas_flops_reset();
        double t0 = now_s();
        if (gf_model_forward(m, in, tg, B, L, &loss)) return cli_error("%s", gf_last_error());
        double t1 = now_s();
        gf_model_zero_grad(m);
        gf_model_backward(m);
        double t2 = now_s();
        gf_adamw_step(opt_, m, 6e-4f);
        double t3 = now_s();
        if (s >= 0) {
            ts[s] = t3 - t0;
            tfs[s] = t1 - t0;
            tbs[s] = t2 - t1;
            tos[s] = t3 - t2;
        }
    }
    flops = gf_blas_flops() / (uint64_t)steps;
    double p2 = sgemm_peak();
    peak = p2 > peak ? p2 : peak; /* best of before and after the steps */
    double t = median(ts, steps), tf = median(tfs, steps), tb = median(tbs, steps), to = median(tos, steps);
    double tps = (double)(B * L) / t, gf = (double)flops / t / 1e9;
    if (json) {
        printf("{\"bench\": \"train\", \"model\": \"%s\", \"params\": %lld, \"vocab\": %lld, \"batch\": %lld, "
               "\"seq_len\": %lld, \"steps\": %lld, \"tokens_per_s\": %.1f, \"ms_forward\": %.2f, "
               "\"ms_backward\": %.2f, \"ms_optimizer\": %.2f, \"gflop_per_step\": %.3f, \"gflops\": %.1f, "
               "\"utilisation\": %.3f, ", mo.preset ? mo.preset : mo.config_path, (long long)gf_model_num_params(m),
               (long long)cfg.vocab_size, (long long)B, (long long)L, (long long)steps, tps, 1e3 * tf, 1e3 * tb,
               1e3 * to, (double)flops / 1e9, gf, gf / peak);
        machine_json(stdout, peak);
        printf(", \"loss\": %.4f}\n", loss);
    } else {
        printf("%s  B=%lld L=%lld  %.0f tokens/s  step %.1f ms (forward %.1f, backward %.1f, AdamW %.1f)\n",
               mo.preset ? mo.preset : mo.config_path, (long long)B, (long long)L, tps, 1e3 * t, 1e3 * tf,
               1e3 * tb, 1e3 * to);
        printf("matmul %.2f GFLOP/step, %.1f GFLOP/s = %.0f%% of the sgemm peak %.1f GFLOP/s (%s, %d threads)\n",
               (double)flops / 1e9, gf, 100 * gf / peak, peak, gf_blas_kernel(), gf_max_threads());
    }
    free(in);
    free(tg);
    free(ts);
    gf_adamw_free(opt_);
    gf_model_free(m);
    return EXIT_OK;
}

/* ---- bench mixer ------------------------------------------------------------------------------------------- */

static int bench_mixer(int argc, char **argv) {
    static const struct option longopts[] = {{"mixer", 1, 0, 'm'}, {"seq-lens", 1, 0, 'L'}, {"batch", 1, 0, 'b'},
                                             {"reps", 1, 0, 'r'}, {"set", 1, 0, OPT_SET},
                                             {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *mixer = "grassmann", *lens = "256,1024,4096,8192";
    int64_t B = 1, reps = 3;
    cli_model_opts mo = {0};
    int json = 0, opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm': mixer = optarg; break;
        case 'L': lens = optarg; break;
        case 'b': if ((rc = cli_parse_i64("bench mixer", "--batch", optarg, 1, 1 << 16, &B))) return rc; break;
        case 'r': if ((rc = cli_parse_i64("bench mixer", "--reps", optarg, 1, 1000, &reps))) return rc; break;
        case OPT_SET: if ((rc = cli_model_option(&mo, "bench mixer", opt, optarg)) > 1) return rc; break;
        case 'j': json = 1; break;
        case 'h':
            printf("usage: grassflow bench mixer [--mixer NAME] [--seq-lens 256,1024,...] [--batch B]\n"
                   "                            [--reps R] [--set K=V]... [--json]\n\n"
                   "Time one mixer layer alone (d 256, rank 32, offsets 1..16, 4 heads: the 6L models' layer),\n"
                   "forward and backward, best of R, per token; memory per token = the activations it keeps plus\n"
                   "its scratch, in bytes.\n");
            return EXIT_OK;
        default: return cli_usage_error("bench mixer", "unknown option");
        }
    }
    gf_config cfg;
    gf_config_preset("grassmann-6L", &cfg);
    const gf_mixer_ops *ops = gf_mixer_find(mixer);
    char set_mixer[64];
    snprintf(set_mixer, sizeof set_mixer, "mixers=%.40s", mixer);
    if (!ops || gf_config_set(&cfg, set_mixer))
        return cli_usage_error("bench mixer", "--mixer %s: not a mixer (grassflow info --mixers lists them)", mixer);
    for (int i = 0; i < mo.n_sets; i++)
        if (gf_config_set(&cfg, mo.sets[i])) return cli_usage_error("bench mixer", "%s", gf_last_error());
    gf_param_spec specs[GF_MIXER_MAX_PARAMS];
    int np = ops->param_specs(&cfg, 0, specs);
    float *p[GF_MIXER_MAX_PARAMS], *g[GF_MIXER_MAX_PARAMS];
    for (int i = 0; i < np; i++) {
        int64_t n = specs[i].shape[0] * (specs[i].ndim == 2 ? specs[i].shape[1] : 1);
        p[i] = malloc((size_t)n * sizeof(float));
        g[i] = calloc((size_t)n, sizeof(float));
        if (!p[i] || !g[i]) return cli_error("out of memory");
        for (int64_t k = 0; k < n; k++) p[i][k] = 0.02f * gf_normal(gf_key(7, (uint64_t)i), (uint64_t)k);
    }
    double peak = sgemm_peak();
    if (json) printf("{\"bench\": \"mixer\", \"mixer\": \"%s\", \"batch\": %lld, \"d\": %lld, \"results\": [", mixer,
                     (long long)B, (long long)cfg.d_model);
    char list[512];
    snprintf(list, sizeof list, "%s", lens);
    int first = 1;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int64_t L = atoll(tok);
        if (L < 1) return cli_usage_error("bench mixer", "--seq-lens: '%s' is not a length", tok);
        const int64_t N = B * L, d = cfg.d_model;
        int nt = gf_max_threads();
        int64_t ns = ops->saved_floats(&cfg, 0, B, L), nsc = ops->scratch_floats(&cfg, 0, B, L, nt);
        float *x = malloc((size_t)(N * d) * sizeof(float)), *y = malloc((size_t)(N * d) * sizeof(float)),
              *dx = calloc((size_t)(N * d), sizeof(float)), *saved = malloc((size_t)ns * sizeof(float)),
              *scratch = malloc((size_t)(nsc ? nsc : 1) * sizeof(float));
        if (!x || !y || !dx || !saved || !scratch) {
            fprintf(stderr, "grassflow: bench mixer: out of memory at L=%lld (%.1f GiB)\n", (long long)L,
                    (double)(ns + nsc) * 4 / (1 << 30));
            free(x), free(y), free(dx), free(saved), free(scratch);
            break;
        }
        for (int64_t k = 0; k < N * d; k++) x[k] = gf_normal(11, (uint64_t)k);
        gf_mixer_call c = {.cfg = &cfg, .layer = 0, .B = B, .T = L, .p = p, .g = g, .saved = saved,
                           .scratch = scratch, .n_threads = nt};
        double bf = INFINITY, bb = INFINITY;
        for (int64_t r = 0; r <= reps; r++) {
            double t0 = now_s();
            ops->forward(&c, y, x);
            double t1 = now_s();
            ops->backward(&c, dx, y, x);
            double t2 = now_s();
            if (r == 0) continue; /* warm-up */
            bf = t1 - t0 < bf ? t1 - t0 : bf;
            bb = t2 - t1 < bb ? t2 - t1 : bb;
        }
        double mem = (double)(ns + nsc) * 4.0 / (double)N;
        if (json) {
            printf("%s{\"seq_len\": %lld, \"us_per_token_forward\": %.4f, \"us_per_token_backward\": %.4f, "
                   "\"us_per_token\": %.4f, \"bytes_per_token\": %.1f}", first ? "" : ", ", (long long)L,
                   1e6 * bf / N, 1e6 * bb / N, 1e6 * (bf + bb) / N, mem);
        } else {
            printf("%-9s L=%-6lld forward %8.3f us/token  backward %8.3f us/token  total %8.3f  memory %9.0f B/token\n",
                   mixer, (long long)L, 1e6 * bf / N, 1e6 * bb / N, 1e6 * (bf + bb) / N, mem);
        }
        first = 0;
        fflush(stdout);
        free(x), free(y), free(dx), free(saved), free(scratch);
    }
    if (json) {
        printf("], ");
        machine_json(stdout, peak);
        printf("}\n");
    }
    for (int i = 0; i < np; i++) free(p[i]), free(g[i]);
    return EXIT_OK;
}

/* ---- bench generate ------------------------------------------------------------------------------------------ */

/* Resident set size now (bytes), from /proc/self/statm; 0 where unavailable. */
static int64_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, res = 0;
    if (!f) return 0;
    if (fscanf(f, "%lld %lld", &size, &res) != 2) res = 0;
    fclose(f);
    return (int64_t)res * 4096;
}

static int parse_positions(const char *arg, int64_t *pos, int *n) {
    *n = 0;
    const char *q = arg;
    while (*q) {
        char *end;
        long long v = strtoll(q, &end, 10);
        if (end == q || v < 1 || v > (1LL << 30) || *n == 16 || (*n && v <= pos[*n - 1]) || (*end && *end != ','))
            return cli_usage_error("bench generate", "--positions expects increasing positions 1..2^30 separated by "
                                   "commas (at most 16), e.g. 100,1000,10000; got '%s'", arg);
        pos[(*n)++] = v;
        q = *end ? end + 1 : end;
    }
    return *n ? EXIT_OK : cli_usage_error("bench generate", "--positions is empty");
}

static int bench_generate(int argc, char **argv) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, {"tokens", 1, 0, 'n'}, {"positions", 1, 0, 'P'},
                                             {"no-cache", 0, 0, 'N'}, {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'},
                                             {0, 0, 0, 0}};
    cli_model_opts mo = {0};
    int64_t n = 32, P[16] = {100, 1000, 10000};
    int nP = 3, json = 0, no_cache = 0, opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int h = cli_model_option(&mo, "bench generate", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        switch (opt) {
        case 'n': if ((rc = cli_parse_i64("bench generate", "--tokens", optarg, 1, 1 << 20, &n))) return rc; break;
        case 'P': if ((rc = parse_positions(optarg, P, &nP))) return rc; break;
        case 'N': no_cache = 1; break;
        case 'j': json = 1; break;
        case 'h':
            printf("usage: grassflow bench generate (--model P | --config F) [--vocab V] [--positions P1,P2,...]\n"
                   "                               [--tokens N] [--no-cache] [--json]\n\n"
                   "Batch-1 generation: for each position P (default 100,1000,10000) the context is advanced to P\n"
                   "(not timed), then N tokens (default 32) are timed, each giving its logits. Reports tokens/s,\n"
                   "microseconds per token, the stream's context state and the process's resident memory.\n"
                   "--no-cache times a full forward over the context (the last max_len tokens with learned\n"
                   "positions, all of them otherwise) per token instead. --vocab defaults to 33278.\n");
            return EXIT_OK;
        default: return cli_usage_error("bench generate", "unknown option");
        }
    }
    if (!mo.vocab && mo.preset) mo.vocab = 33278; /* a config file keeps its own */
    gf_config cfg;
    if ((rc = cli_model_config(&mo, "bench generate", &cfg))) return rc;
    if (cfg.pos == GF_POS_LEARNED && !no_cache && P[nP - 1] + n > cfg.max_len)
        return cli_error("bench generate: position %lld + %lld tokens is past max_len %lld of this model (learned "
                         "positions)\nHINT: --set pos=none or --set pos=sinusoidal, or smaller --positions",
                         (long long)P[nP - 1], (long long)n, (long long)cfg.max_len);
    gf_model *m = gf_model_create(&cfg);
    if (!m) return cli_error("%s", gf_last_error());
    gf_model_init(m, 1);
    const int64_t total = P[nP - 1] + 2 * n;
    int32_t *ctx = malloc((size_t)total * sizeof *ctx);
    gf_stream *s = no_cache ? NULL : gf_stream_create(m);
    if (!ctx || (!no_cache && !s)) {
        free(ctx);
        gf_model_free(m);
        return cli_error("%s", no_cache || s ? "out of memory" : gf_last_error());
    }
    fill_tokens(ctx, total, cfg.vocab_size, 3);
    const char *name = mo.preset ? mo.preset : mo.config_path;
    if (json)
        printf("{\"bench\": \"generate\", \"model\": \"%s\", \"mode\": \"%s\", \"pos\": \"%s\", \"tokens\": %lld, "
               "\"threads\": %d, \"results\": [", name, no_cache ? "recompute" : "stream",
               cfg.pos == GF_POS_LEARNED ? "learned" : cfg.pos == GF_POS_SINUSOIDAL ? "sinusoidal" : "none",
               (long long)n, gf_max_threads());
    rc = EXIT_OK;
    for (int k = 0; k < nP && rc == EXIT_OK; k++) {
        double t = 0.0;
        int64_t at = P[k]; /* a stream already past P[k] (P[k-1] + n > P[k]) measures from where it is */
        if (no_cache) {
            for (int64_t i = -1; i < n; i++) {
                int64_t end = P[k] + (i < 0 ? 0 : i), T = cfg.pos == GF_POS_LEARNED && end > cfg.max_len ? cfg.max_len : end;
                double t0 = now_s();
                if (gf_model_forward(m, ctx + end - T, NULL, 1, T, NULL)) { rc = cli_error("%s", gf_last_error()); break; }
                if (i >= 0) t += now_s() - t0;
            }
        } else {
            if (gf_stream_pos(s) > at) at = gf_stream_pos(s);
            if (gf_stream_feed(s, ctx + gf_stream_pos(s), at - gf_stream_pos(s))) {
                rc = cli_error("%s", gf_last_error());
                break;
            }
            double t0 = now_s();
            for (int64_t i = 0; i < n; i++)
                if (!gf_stream_step(s, ctx[at + i])) { rc = cli_error("%s", gf_last_error()); break; }
            t = now_s() - t0;
        }
        if (rc != EXIT_OK) break;
        const double tps = (double)n / t;
        const long long state = s ? (long long)gf_stream_state_bytes(s) : 0, rss = (long long)rss_bytes();
        if (json)
            printf("%s{\"position\": %lld, \"tokens_per_s\": %.2f, \"us_per_token\": %.2f, \"state_bytes\": %lld, "
                   "\"rss_bytes\": %lld}", k ? ", " : "", (long long)at, tps, 1e6 / tps, state, rss);
        else
            printf("%s  %s  position %-8lld %9.1f tokens/s  %9.1f us/token  state %lld B  rss %.1f MB\n", name,
                   no_cache ? "recompute" : "stream", (long long)at, tps, 1e6 / tps, state, rss / 1e6);
    }
    if (json && rc == EXIT_OK) printf("]}\n");
    gf_stream_free(s);
    free(ctx);
    gf_model_free(m);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "train")) return bench_train(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "mixer")) return bench_mixer(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "generate")) return bench_generate(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: grassflow [--threads T] bench train|mixer|generate [options] [--json]   (each has --help)\n");
        return EXIT_OK;
    }
    return cli_usage_error("bench", "expected a subcommand: train, mixer or generate");
}
