/* grassflow bench: throughput of training, of the mixers alone, and of generation, with the machine's
 * measured sgemm peak beside the achieved matmul FLOP/s. The command's code lives here, in bench/ with every
 * other benchmark (bench/README.md), and is compiled into the command as src/cli/ is (on the installed
 * headers and src/cli/cli.h alone). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "grassflow_plugin.h" /* gf_clock_s */

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
        double t0 = gf_clock_s();
        gf_sgemm(false, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double g = 2.0 * n * n * n / (gf_clock_s() - t0) / 1e9;
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

/* Random inputs need no library: splitmix64's finaliser, counter-based (element i of stream seed), the
 * numbers the benchmark has always used. */
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t rand64(uint64_t seed, uint64_t i) { return mix64(mix64(seed) + i * 0xD1B54A32D192ED03ull); }

/* Standard normal (Box-Muller on the two halves of one draw). */
static float normal(uint64_t seed, uint64_t i) {
    uint64_t r = rand64(seed, i);
    double u1 = ((double)(r >> 32) + 1.0) * (1.0 / 4294967297.0); /* (0, 1) */
    double u2 = (double)(r & 0xFFFFFFFFu) * (1.0 / 4294967296.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static void fill_tokens(int32_t *x, int64_t n, int64_t V, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(rand64(seed, (uint64_t)i) % (uint64_t)V);
}

static void machine_json(FILE *f, double peak) {
    fprintf(f, "\"blas_kernel\": ");
    gf_json_put_str(f, gf_blas_kernel() ? gf_blas_kernel() : "unknown");
    fprintf(f, ", \"fp32_matmul\": ");
    gf_json_put_str(f, gf_fp32_matmul());
    fprintf(f, ", \"fp32_fast_attention\": ");
    gf_json_put_str(f, gf_attention_fast_kernel());
    fprintf(f, ", \"threads\": %d, \"sgemm_peak_gflops\": %s", gf_threads(), gf_json_num(peak, 'f', 1).s);
}

/* A subcommand's option parser returns BENCH_RUN to go on, or the exit code (--help, a usage error). */
#define BENCH_RUN (-1)

/* ---- bench train ------------------------------------------------------------------------------------------- */

typedef struct {
    cli_model_opts mo;
    int64_t B, L, steps;
    int json;
    gf_precision precision; /* of the forward and backward matmuls */
} train_opts;

/* --precision P: one that cannot run here is said, with the reason, and the bench runs fp32 (and says so). */
static int bench_precision(const char *cmd, const char *arg, gf_precision *p) {
    if (gf_precision_parse(arg, p)) return cli_usage_error(cmd, "--precision expects fp32, fp32-fast or bf16, not '%s'", arg);
    const char *why = gf_precision_unavailable(*p);
    if (why) {
        fprintf(stderr, "grassflow %s: --precision %s: %s; timing fp32 instead\n", cmd, arg, why);
        *p = GF_PRECISION_FP32;
    }
    return EXIT_OK;
}

static int train_parse(int argc, char **argv, train_opts *o) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, {"batch", 1, 0, 'b'}, {"seq-len", 1, 0, 'L'},
                                             {"steps", 1, 0, 'n'}, {"json", 0, 0, 'j'}, {"precision", 1, 0, 'p'},
                                             {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (train_opts){.B = 8, .L = 128, .steps = 5};
    int opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int h = cli_model_option(&o->mo, "bench train", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        switch (opt) {
        case 'b': if ((rc = cli_parse_i64("bench train", "--batch", optarg, 1, 1 << 16, &o->B))) return rc; break;
        case 'L': if ((rc = cli_parse_i64("bench train", "--seq-len", optarg, 1, 1 << 20, &o->L))) return rc; break;
        case 'n': if ((rc = cli_parse_i64("bench train", "--steps", optarg, 1, 1 << 20, &o->steps))) return rc; break;
        case 'j': o->json = 1; break;
        case 'p': if ((rc = bench_precision("bench train", optarg, &o->precision))) return rc; break;
        case 'h':
            printf("usage: grassflow bench train (--model P | --config F) [--vocab V] [--set K=V]... [--batch B]\n"
                   "                            [--seq-len L] [--steps N] [--precision P] [--json]\n\n"
                   "Time full training steps (forward, backward, AdamW) on random tokens after one warm-up step\n"
                   "(random labels, one per sequence, for a classifier: how a bidirectional mixer is timed; an\n"
                   "encoder-decoder reads a random source of L ids too; tokens/s counts the target's).\n"
                   "Reports tokens/s and the time of each phase (medians over the steps), the matmul FLOPs\n"
                   "actually issued per step, the achieved GFLOP/s and the sgemm peak measured in the same run. --vocab defaults to 33278\n"
                   "(WikiText-2 words). --precision fp32-fast or bf16 runs the forward and backward as train\n"
                   "--precision does; bf16 reports oneDNN's ISA and kernel.\n");
            return EXIT_OK;
        default: return cli_usage_error("bench train", "unknown option");
        }
    }
    if (!o->mo.vocab && o->mo.preset) o->mo.vocab = 33278; /* a config file keeps its own */
    return BENCH_RUN;
}

/* What bench train measured: median times (s) of a step and of its phases, matmul FLOPs per step. */
typedef struct {
    double step, fwd, bwd, opt, peak;
    uint64_t flops;
    float loss;
} train_result;

/* One warm-up step, then o->steps timed ones on the batch b; ts holds 4 * steps doubles. */
static int train_measure(const train_opts *o, gf_model *m, gf_adamw *opt, const gf_batch *b, double *ts,
                         train_result *r) {
    const int64_t steps = o->steps;
    double *tfs = ts + steps, *tbs = tfs + steps, *tos = tbs + steps;
    r->peak = sgemm_peak();
    r->loss = 0;
    gf_model_set_training(m, true, 1, 0);
    for (int64_t s = -1; s < steps; s++) {
        if (s == 0) gf_blas_flops_reset();
        double t0 = gf_clock_s();
        if (gf_set_matmul_precision(o->precision) || gf_model_forward_batch(m, b, &r->loss))
            return cli_error("%s", gf_last_error());
        double t1 = gf_clock_s();
        gf_model_zero_grad(m);
        gf_model_backward(m);
        gf_set_matmul_precision(GF_PRECISION_FP32);
        double t2 = gf_clock_s();
        if (gf_adamw_step(opt, m, 6e-4f)) return cli_error("%s", gf_last_error());
        double t3 = gf_clock_s();
        if (s >= 0) {
            ts[s] = t3 - t0;
            tfs[s] = t1 - t0;
            tbs[s] = t2 - t1;
            tos[s] = t3 - t2;
        }
    }
    r->flops = gf_blas_flops() / (uint64_t)steps;
    double p2 = sgemm_peak();
    r->peak = p2 > r->peak ? p2 : r->peak; /* best of before and after the steps */
    r->step = median(ts, steps), r->fwd = median(tfs, steps), r->bwd = median(tbs, steps), r->opt = median(tos, steps);
    return EXIT_OK;
}

static void train_report_in(const train_opts *o, const gf_config *cfg, const gf_model *m, const train_result *r) {
    const char *name = o->mo.preset ? o->mo.preset : o->mo.config_path;
    double tps = (double)(o->B * o->L) / r->step, gf = (double)r->flops / r->step / 1e9;
    if (o->json) {
        printf("{\"bench\": \"train\", \"model\": ");
        gf_json_put_str(stdout, name);
        printf(", \"head\": \"%s\", \"params\": %lld, \"vocab\": %lld, \"batch\": %lld, \"seq_len\": %lld, \"steps\": %lld, "
               "\"tokens_per_s\": %s, \"ms_forward\": %s, \"ms_backward\": %s, \"ms_optimizer\": %s, "
               "\"gflop_per_step\": %s, \"gflops\": %s, \"utilisation\": %s, ",
               gf_model_predicts_next_token(m) ? "next_token" : "classify", (long long)gf_model_num_params(m),
               (long long)cfg->vocab_size, (long long)o->B, (long long)o->L, (long long)o->steps,
               gf_json_num(tps, 'f', 1).s, gf_json_num(1e3 * r->fwd, 'f', 2).s, gf_json_num(1e3 * r->bwd, 'f', 2).s,
               gf_json_num(1e3 * r->opt, 'f', 2).s, gf_json_num((double)r->flops / 1e9, 'f', 3).s,
               gf_json_num(gf, 'f', 1).s, gf_json_num(gf / r->peak, 'f', 3).s);
        machine_json(stdout, r->peak);
        printf(", \"precision\": \"%s\", \"bf16_isa\": \"%s\", \"bf16_kernel\": \"%s\"", gf_precision_name(o->precision),
               o->precision == GF_PRECISION_BF16 ? gf_bf16_isa() : "", o->precision == GF_PRECISION_BF16 ? gf_bf16_kernel() : "");
        printf(", \"loss\": %s}\n", gf_json_num(r->loss, 'f', 4).s);
    } else {
        char shown[GF_ESCAPE_CAP(512)]; /* a config's path: no control character on the terminal */
        printf("%s  B=%lld L=%lld  %.0f tokens/s  step %.1f ms (forward %.1f, backward %.1f, AdamW %.1f)\n",
               cli_escape_cut(shown, sizeof shown, name, 0),
               (long long)o->B, (long long)o->L, tps, 1e3 * r->step, 1e3 * r->fwd, 1e3 * r->bwd, 1e3 * r->opt);
        printf("matmul %.2f GFLOP/step, %.1f GFLOP/s = %.0f%% of the sgemm peak %.1f GFLOP/s (%s, %d threads)\n",
               (double)r->flops / 1e9, gf, 100 * gf / r->peak, r->peak, gf_fp32_matmul(), gf_threads());
        if (o->precision == GF_PRECISION_BF16)
            printf("bf16 matmuls: oneDNN, CPU ISA %s, last kernel %s\n", gf_bf16_isa(), gf_bf16_kernel());
    }
}

static void train_report(const train_opts *o, const gf_config *cfg, const gf_model *m, const train_result *r) {
    gf_set_matmul_precision(o->precision); /* so that gf_fp32_matmul says what the steps ran (fp32-fast: oneDNN) */
    train_report_in(o, cfg, m, r);
    gf_set_matmul_precision(GF_PRECISION_FP32);
}

static int bench_train(int argc, char **argv) {
    train_opts o;
    int rc = train_parse(argc, argv, &o);
    if (rc != BENCH_RUN) return rc;
    gf_config cfg;
    if ((rc = cli_model_config(&o.mo, "bench train", &cfg))) return rc;
    gf_model *m = gf_model_create(&cfg);
    if (!m) return cli_error("%s", gf_last_error());
    gf_model_init(m, 1);
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){6e-4f, 0.9f, 0.95f, 1e-8f, 0.01f});
    int32_t *in = malloc((size_t)(o.B * o.L) * sizeof *in), *tg = malloc((size_t)(o.B * o.L) * sizeof *tg);
    /* an encoder-decoder reads a source as long as its target: random ids of its source vocabulary */
    int32_t *src = cfg.source_vocab > 0 ? malloc((size_t)(o.B * o.L) * sizeof *src) : NULL;
    double *ts = malloc((size_t)(4 * o.steps) * sizeof *ts);
    train_result r;
    if (!opt || !in || !tg || !ts || (cfg.source_vocab > 0 && !src)) {
        rc = cli_error("out of memory");
    } else {
        /* next_token: a target per position; a classifier (a bidirectional model): a label per sequence */
        const int64_t n_tg = gf_model_predicts_next_token(m) ? o.B * o.L : o.B;
        fill_tokens(in, o.B * o.L, cfg.vocab_size, 1);
        fill_tokens(tg, n_tg, gf_model_n_outputs(m), 2);
        if (src) fill_tokens(src, o.B * o.L, cfg.source_vocab, 3);
        const gf_batch b = {.B = o.B, .T = o.L, .ids = in, .targets = tg, .n_targets = n_tg, .S = src ? o.L : 0,
                            .source = src};
        if ((rc = train_measure(&o, m, opt, &b, ts, &r)) == EXIT_OK) train_report(&o, &cfg, m, &r);
    }
    free(in);
    free(tg);
    free(src);
    free(ts);
    gf_adamw_free(opt);
    gf_model_free(m);
    return rc;
}

/* ---- bench mixer ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *lens;
    char mixer_set[64]; /* "mixers=NAME" of --mixer, applied in its place among the --set options */
    int64_t B, reps, max_bytes;
    cli_model_opts mo; /* only its --set list */
    int json;
} mixer_opts;

/* --mixer NAME: a registered mixer, set on every layer where the option stands among the --set options
 * (so `--set head.kind=classify --mixer linformer --set k_proj=64` gives a bidirectional layer its keys). */
static int mixer_option(mixer_opts *o, const char *name) {
    char *about = gf_mixer_describe(name); /* NULL: no mixer has that name (or letter) */
    const bool known = about != NULL;
    free(about);
    if (!known || strlen(name) > 40)
        return cli_usage_error("bench mixer", "--mixer %s: not a mixer (grassflow info --mixers lists them)", name);
    if (o->mixer_set[0]) return cli_usage_error("bench mixer", "--mixer given twice");
    snprintf(o->mixer_set, sizeof o->mixer_set, "mixers=%s", name);
    int rc = cli_model_option(&o->mo, "bench mixer", OPT_SET, o->mixer_set);
    return rc > 1 ? rc : EXIT_OK;
}

static int mixer_help(void) {
    printf("usage: grassflow bench mixer [--mixer NAME] [--seq-lens 256,1024,...] [--batch B] [--reps R]\n"
           "                            [--max-bytes N] [--set K=V]... [--json]\n\n"
           "Time layer 0's mixer alone, forward and backward, best of R (default 3) after a warm-up, per token,\n"
           "and its memory per token (the activations it keeps plus its scratch, in bytes). The layer is\n"
           "grassmann-6L's (d 256, rank 32, offsets 1..16; 4 heads for the attention family) with max_len raised\n"
           "to the longest length, then --mixer and the --set options in the order given (put a head or\n"
           "direction change before --mixer for a mixer that is bidirectional only). A length whose estimated\n"
           "memory (the layer's activations and scratch, its input, output and input gradient) exceeds\n"
           "--max-bytes (default 4294967296, 4 GiB) is skipped with a line that says so.\n");
    return EXIT_OK;
}

static int mixer_parse(int argc, char **argv, mixer_opts *o) {
    static const struct option longopts[] = {{"mixer", 1, 0, 'm'}, {"seq-lens", 1, 0, 'L'}, {"batch", 1, 0, 'b'},
                                             {"reps", 1, 0, 'r'}, {"max-bytes", 1, 0, 'M'}, {"set", 1, 0, OPT_SET},
                                             {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (mixer_opts){.lens = "256,1024,4096,8192", .B = 1, .reps = 3, .max_bytes = 4LL << 30};
    int opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm': if ((rc = mixer_option(o, optarg))) return rc; break;
        case 'L': o->lens = optarg; break;
        case 'b': if ((rc = cli_parse_i64("bench mixer", "--batch", optarg, 1, 1 << 16, &o->B))) return rc; break;
        case 'r': if ((rc = cli_parse_i64("bench mixer", "--reps", optarg, 1, 1000, &o->reps))) return rc; break;
        case 'M':
            if ((rc = cli_parse_i64("bench mixer", "--max-bytes", optarg, 1, INT64_MAX, &o->max_bytes))) return rc;
            break;
        case OPT_SET: if ((rc = cli_model_option(&o->mo, "bench mixer", opt, optarg)) > 1) return rc; break;
        case 'j': o->json = 1; break;
        case 'h': return mixer_help();
        default: return cli_usage_error("bench mixer", "unknown option");
        }
    }
    return BENCH_RUN;
}

/* The lengths of --seq-lens into L[0..*n) (at most 32), each 1..2^24. */
static int mixer_lens(const char *arg, int64_t *L, int *n) {
    char list[512], *items[32];
    int rc = cli_split_list("bench mixer", "--seq-lens", arg, list, sizeof list, items, 32, "lengths", n);
    for (int k = 0; !rc && k < *n; k++) {
        char *end;
        long long v = strtoll(items[k], &end, 10);
        if (end == items[k] || *end || v < 1 || v > (1LL << 24))
            return cli_usage_error("bench mixer", "--seq-lens: '%s' is not a length 1..16777216 (at most 32 of "
                                   "them, separated by commas)", items[k]);
        for (int i = 0; i < k; i++)
            if (L[i] == v) return cli_usage_error("bench mixer", "--seq-lens %s: lists the length %lld twice", arg, v);
        L[k] = v;
    }
    return rc;
}

/* grassmann-6L with max_len at least max_L, then the --set list (with --mixer in its place). */
static int mixer_config(const mixer_opts *o, int64_t max_L, gf_config *cfg) {
    gf_config_preset("grassmann-6L", cfg);
    if (cfg->max_len < max_L) {
        char ml[48];
        snprintf(ml, sizeof ml, "max_len=%lld", (long long)max_L);
        if (gf_config_set(cfg, ml)) return cli_error("bench mixer: %s", gf_last_error());
    }
    return cli_model_sets(&o->mo, "bench mixer", cfg);
}

/* What the length L needs in all (bytes): the harness's activations and scratch, and x, y, dx. */
static double mixer_bytes_at(const mixer_opts *o, const gf_config *cfg, int64_t L) {
    const double N = (double)(o->B * L);
    return (double)gf_mixer_harness_bytes_for(cfg, 0, o->B, L) + 3.0 * N * (double)cfg->d_model * sizeof(float);
}

/* A length over the memory budget: its line or JSON entry says so. */
static int mixer_skip_len(const mixer_opts *o, const char *name, int64_t L, double need, int first) {
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (o->json)
        printf("%s{\"seq_len\": %lld, \"skipped\": \"memory\", \"estimated_bytes\": %.0f, \"max_bytes\": %lld}",
               first ? "" : ", ", (long long)L, need, (long long)o->max_bytes);
    else
        printf("%-9s L=%-6lld skipped: needs an estimated %.2f GiB, over the budget --max-bytes %.2f GiB\n", name,
               (long long)L, need / gib, (double)o->max_bytes / gib);
    return cli_stdout_failed() ? -1 : 0;
}

/* Time layer 0's mixer at length L (best of o->reps after a warm-up) and print the line or JSON entry;
 * -1 if memory ran out or stdout failed (reported: the caller stops there). */
static int mixer_one_len(const mixer_opts *o, const char *name, const gf_config *cfg, int64_t L, int first) {
    const int64_t N = o->B * L, d = cfg->d_model;
    const double need = mixer_bytes_at(o, cfg, L);
    if (need > (double)o->max_bytes) return mixer_skip_len(o, name, L, need, first);
    gf_mixer_harness *h = gf_mixer_harness_create(cfg, 0, o->B, L, 7);
    float *x = malloc((size_t)(N * d) * sizeof(float)), *y = malloc((size_t)(N * d) * sizeof(float)),
          *dx = calloc((size_t)(N * d), sizeof(float));
    if (!h || !x || !y || !dx) {
        fprintf(stderr, "grassflow: bench mixer: out of memory at L=%lld (%.1f GiB)\n", (long long)L,
                need / (1 << 30));
        free(x), free(y), free(dx), gf_mixer_harness_free(h);
        return -1;
    }
    for (int64_t k = 0; k < N * d; k++) x[k] = normal(11, (uint64_t)k);
    double bf = INFINITY, bb = INFINITY;
    for (int64_t r = 0; r <= o->reps; r++) {
        double t0 = gf_clock_s();
        gf_mixer_harness_forward(h, y, x);
        double t1 = gf_clock_s();
        gf_mixer_harness_backward(h, dx, y, x);
        double t2 = gf_clock_s();
        if (r == 0) continue; /* warm-up */
        bf = t1 - t0 < bf ? t1 - t0 : bf;
        bb = t2 - t1 < bb ? t2 - t1 : bb;
    }
    double mem = (double)gf_mixer_harness_bytes(h) / (double)N;
    if (o->json) {
        printf("%s{\"seq_len\": %lld, \"us_per_token_forward\": %s, \"us_per_token_backward\": %s, "
               "\"us_per_token\": %s, \"bytes_per_token\": %s}", first ? "" : ", ", (long long)L,
               gf_json_num(1e6 * bf / N, 'f', 4).s, gf_json_num(1e6 * bb / N, 'f', 4).s,
               gf_json_num(1e6 * (bf + bb) / N, 'f', 4).s, gf_json_num(mem, 'f', 1).s);
    } else {
        printf("%-9s L=%-6lld forward %8.3f us/token  backward %8.3f us/token  total %8.3f  memory %9.0f B/token\n",
               name, (long long)L, 1e6 * bf / N, 1e6 * bb / N, 1e6 * (bf + bb) / N, mem);
    }
    free(x), free(y), free(dx), gf_mixer_harness_free(h);
    return cli_stdout_failed() ? -1 : 0; /* a failed write stops the run (the longer lengths take longest) */
}

static int bench_mixer(int argc, char **argv) {
    mixer_opts o;
    int rc = mixer_parse(argc, argv, &o);
    if (rc != BENCH_RUN) return rc;
    int64_t L[32];
    int nL, first = 1;
    if ((rc = mixer_lens(o.lens, L, &nL))) return rc;
    int64_t max_L = 0;
    for (int i = 0; i < nL; i++) max_L = L[i] > max_L ? L[i] : max_L;
    gf_config cfg;
    if ((rc = mixer_config(&o, max_L, &cfg))) return rc;
    char *name = gf_config_get(&cfg, "layers.0.mixer"); /* the label: the mixer layer 0 has */
    if (!name) return cli_error("bench mixer: %s", gf_last_error());
    if (name[0] == '"') memmove(name, name + 1, strlen(name)), name[strcspn(name, "\"")] = '\0';
    double peak = sgemm_peak();
    if (o.json) {
        printf("{\"bench\": \"mixer\", \"mixer\": ");
        gf_json_put_str(stdout, name);
        printf(", \"batch\": %lld, \"d\": %lld, \"max_len\": %lld, \"max_bytes\": %lld, \"results\": [",
               (long long)o.B, (long long)cfg.d_model, (long long)cfg.max_len, (long long)o.max_bytes);
    }
    for (int i = 0; i < nL; i++, first = 0)
        if (mixer_one_len(&o, name, &cfg, L[i], first)) {
            rc = EXIT_RUNTIME; /* the lengths measured are printed; the run did not finish */
            break;
        }
    if (o.json) {
        printf("], ");
        machine_json(stdout, peak);
        printf("}\n");
    }
    free(name);
    return rc;
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
    char list[512], *items[16];
    int rc = cli_split_list("bench generate", "--positions", arg, list, sizeof list, items, 16, "positions", n);
    for (int k = 0; !rc && k < *n; k++) {
        char *end;
        long long v = strtoll(items[k], &end, 10);
        if (end == items[k] || *end || v < 1 || v > (1LL << 30) || (k && v <= pos[k - 1]))
            return cli_usage_error("bench generate", "--positions expects increasing positions 1..2^30 separated by "
                                   "commas (at most 16), e.g. 100,1000,10000; got '%s'", arg);
        pos[k] = v;
    }
    return rc;
}

typedef struct {
    cli_model_opts mo;
    int64_t n, P[16];
    int nP, json, no_cache;
    gf_weights weights;
} gen_opts;

static int gen_parse(int argc, char **argv, gen_opts *o) {
    static const struct option longopts[] = {CLI_MODEL_LONGOPTS, {"tokens", 1, 0, 'n'}, {"positions", 1, 0, 'P'},
                                             {"no-cache", 0, 0, 'N'}, {"json", 0, 0, 'j'}, {"help", 0, 0, 'h'},
                                             {"weights", 1, 0, 'W'}, {0, 0, 0, 0}};
    *o = (gen_opts){.n = 32, .P = {100, 1000, 10000}, .nP = 3};
    int opt, rc;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int h = cli_model_option(&o->mo, "bench generate", opt, optarg);
        if (h == 1) continue;
        if (h > 1) return h;
        switch (opt) {
        case 'n': if ((rc = cli_parse_i64("bench generate", "--tokens", optarg, 1, 1 << 20, &o->n))) return rc; break;
        case 'P': if ((rc = parse_positions(optarg, o->P, &o->nP))) return rc; break;
        case 'N': o->no_cache = 1; break;
        case 'j': o->json = 1; break;
        case 'W': if ((rc = cli_weights_option("bench generate", optarg, &o->weights))) return rc; break;
        case 'h':
            printf("usage: grassflow bench generate (--model P | --config F) [--vocab V] [--positions P1,P2,...]\n"
                   "                               [--tokens N] [--no-cache] [--weights W] [--json]\n\n"
                   "Batch-1 generation: for each position P (default 100,1000,10000) the context is advanced to P\n"
                   "(not timed), then N tokens (default 32) are timed, each giving its logits. Reports tokens/s,\n"
                   "microseconds per token, the stream's context state and the process's resident memory, one\n"
                   "row as each position is measured; while the context advances, progress goes to stderr.\n"
                   "--no-cache times a full forward over the context (the last max_len tokens with learned\n"
                   "positions, all of them otherwise) per token instead. --vocab defaults to 33278. --weights\n"
                   "bf16 or int8 times the model with its matrices so (as generate --weights).\n");
            return EXIT_OK;
        default: return cli_usage_error("bench generate", "unknown option");
        }
    }
    if (!o->mo.vocab && o->mo.preset) o->mo.vocab = 33278; /* a config file keeps its own */
    return BENCH_RUN;
}

/* Feed the stream up to position `to` (untimed), in chunks, with progress on stderr while it takes more
 * than a second: a "\r"-rewritten line on a terminal, else a line every five seconds. */
static int gen_advance(gf_stream *s, const int32_t *ctx, int64_t to) {
    const int64_t from = gf_stream_pos(s), chunk = 256;
    const int tty = isatty(STDERR_FILENO);
    const double t0 = gf_clock_s();
    double shown = t0;
    int said = 0;
    while (gf_stream_pos(s) < to) {
        const int64_t at = gf_stream_pos(s), k = to - at < chunk ? to - at : chunk;
        if (gf_stream_feed(s, ctx + at, k)) return -1;
        const double t = gf_clock_s();
        if (t - t0 > 1.0 && t - shown > (tty ? 0.5 : 5.0)) {
            fprintf(stderr, "%sadvancing the context to position %lld: %lld (%.0f%%), %.0f s%s", tty ? "\r" : "",
                    (long long)to, (long long)gf_stream_pos(s), 100.0 * (double)(gf_stream_pos(s) - from) / (double)(to - from),
                    t - t0, tty ? "" : "\n");
            shown = t;
            said = 1;
        }
    }
    if (said && tty) fprintf(stderr, "\r%80s\r", "");
    return 0;
}

/* Time o->n tokens from position P (*at: where the timing started; a stream already past P, because
 * P[k-1] + n > P[k], measures from where it is) into *t seconds: stream steps, or with s NULL full forwards. */
static int gen_time_at(const gen_opts *o, const gf_config *cfg, gf_model *m, gf_stream *s, const int32_t *ctx,
                       int64_t P, int64_t *at, double *t) {
    *t = 0.0;
    *at = P;
    if (!s) {
        for (int64_t i = -1; i < o->n; i++) {
            int64_t end = P + (i < 0 ? 0 : i), T = cfg->pos == GF_POS_LEARNED && end > cfg->max_len ? cfg->max_len : end;
            double t0 = gf_clock_s();
            if (gf_model_forward(m, ctx + end - T, NULL, 1, T, NULL)) return cli_error("%s", gf_last_error());
            if (i >= 0) *t += gf_clock_s() - t0;
        }
        return EXIT_OK;
    }
    if (gf_stream_pos(s) > *at) *at = gf_stream_pos(s);
    if (gen_advance(s, ctx, *at)) return cli_error("%s", gf_last_error());
    double t0 = gf_clock_s();
    for (int64_t i = 0; i < o->n; i++)
        if (!gf_stream_step(s, ctx[*at + i])) return cli_error("%s", gf_last_error());
    *t = gf_clock_s() - t0;
    return EXIT_OK;
}

/* Every position in turn, one line or JSON entry each. */
static int gen_run(const gen_opts *o, const gf_config *cfg, gf_model *m, gf_stream *s, const int32_t *ctx) {
    const char *name = o->mo.preset ? o->mo.preset : o->mo.config_path;
    char shown[GF_ESCAPE_CAP(512)]; /* the text rows': no control character on the terminal */
    cli_escape_cut(shown, sizeof shown, name, 0);
    if (o->json) {
        printf("{\"bench\": \"generate\", \"model\": ");
        gf_json_put_str(stdout, name);
        printf(", \"mode\": \"%s\", \"weights\": \"%s\", \"weights_kernel\": ", o->no_cache ? "recompute" : "stream",
               gf_weights_name(o->weights));
        gf_json_put_str(stdout, gf_weights_kernel(o->weights));
        printf(", \"pos\": \"%s\", \"tokens\": %lld, \"threads\": %d, \"results\": [",
               cfg->pos == GF_POS_LEARNED ? "learned" : cfg->pos == GF_POS_SINUSOIDAL ? "sinusoidal" : "none",
               (long long)o->n, gf_threads());
    }
    else
        printf("%s  %s weights, one-row matmuls on %s\n", shown, gf_weights_name(o->weights), gf_weights_kernel(o->weights));
    for (int k = 0; k < o->nP; k++) {
        double t;
        int64_t at;
        int rc = gen_time_at(o, cfg, m, s, ctx, o->P[k], &at, &t);
        if (rc != EXIT_OK) return rc;
        const double tps = (double)o->n / t;
        const long long state = s ? (long long)gf_stream_state_bytes(s) : 0, rss = (long long)rss_bytes();
        if (o->json)
            printf("%s{\"position\": %lld, \"tokens_per_s\": %s, \"us_per_token\": %s, \"state_bytes\": %lld, "
                   "\"rss_bytes\": %lld}", k ? ", " : "", (long long)at, gf_json_num(tps, 'f', 2).s,
                   gf_json_num(1e6 / tps, 'f', 2).s, state, rss);
        else
            printf("%s  %s %s  position %-8lld %9.1f tokens/s  %9.1f us/token  state %lld B  rss %.1f MB\n", shown,
                   o->no_cache ? "recompute" : "stream", gf_weights_name(o->weights), (long long)at, tps, 1e6 / tps, state, rss / 1e6);
        /* flushed here: each row is out as it is measured, piped or killed */
        if (cli_stdout_failed()) return EXIT_RUNTIME; /* stop: each position takes seconds */
    }
    if (o->json) printf("]}\n");
    return EXIT_OK;
}

static int bench_generate(int argc, char **argv) {
    gen_opts o;
    int rc = gen_parse(argc, argv, &o);
    if (rc != BENCH_RUN) return rc;
    gf_config cfg;
    if ((rc = cli_model_config(&o.mo, "bench generate", &cfg))) return rc;
    const int64_t n = o.n, last = o.P[o.nP - 1];
    if (cfg.pos == GF_POS_LEARNED && !o.no_cache && last + n > cfg.max_len)
        return cli_error("bench generate: position %lld + %lld tokens is past max_len %lld of this model (learned "
                         "positions)\nHINT: --set pos=none or --set pos=sinusoidal, or smaller --positions",
                         (long long)last, (long long)n, (long long)cfg.max_len);
    gf_model *m = gf_model_create(&cfg);
    if (!m) return cli_error("%s", gf_last_error());
    gf_model_init(m, 1);
    if ((rc = cli_set_weights(m, o.weights, "bench generate"))) {
        gf_model_free(m);
        return rc;
    }
    const int64_t total = last + 2 * n;
    int32_t *ctx = malloc((size_t)total * sizeof *ctx);
    gf_stream *s = o.no_cache ? NULL : gf_stream_create(m);
    if (!ctx || (!o.no_cache && !s)) {
        free(ctx);
        gf_model_free(m);
        return cli_error("%s", o.no_cache || s ? "out of memory" : gf_last_error());
    }
    fill_tokens(ctx, total, cfg.vocab_size, 3);
    rc = gen_run(&o, &cfg, m, s, ctx);
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
