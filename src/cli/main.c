/* grassflow: the command-line tool. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "testhooks.h"

/* the spin count of OpenMP's idle threads grassflow runs with unless told otherwise (fix_openmp_spin) */
#define GF_CLI_SPINCOUNT "10000"

static void usage(FILE *out) {
    fprintf(out,
            "grassflow %s: attention-free Grassmann-flow language models and their Transformer twins\n\n"
            "usage: grassflow COMMAND [options]     (grassflow COMMAND --help for its options)\n\n"
            "commands:\n"
            "  info    show a model's config and parameter count\n"
            "  init    write a freshly initialised model as a safetensors checkpoint\n"
            "  score   mean next-token cross-entropy and perplexity of a checkpoint on token ids\n"
            "  train   train a model on a corpus (WikiText-2, Tiny Shakespeare, your text)\n"
            "  eval    perplexity of a checkpoint on a corpus split, or a classifier's accuracy\n"
            "  predict a classifier's label and probabilities for each example (your own sentence pairs)\n"
            "  generate  sample text from a checkpoint\n"
            "  quantize  write a checkpoint's weight matrices as int8 or bf16, for generation\n"
            "  import  a model another program trained (alphaXiv's best.pt, ...) as a grassflow checkpoint\n"
            "  export  a grassflow checkpoint in another program's format (alphaXiv's best.pt, GrassLM's)\n"
            "  compare train several models with one recipe and tabulate them\n"
            "  search  compare grown into grids and lists of options, with seeds and halving\n"
            "  data    corpus statistics (grassflow data stats)\n"
            "  features  a model's last hidden states for a text or a sentence pair\n"
            "  inspect   what each layer does with a text (JSON, SVG heat maps); the loss with an offset dropped\n"
            "  plot    draw runs' training and validation curves, or a table of series (--table), into an SVG\n"
            "  bench   throughput of training, of one mixer, of generation (grassflow bench train|mixer|generate)\n\n"
            "  --version     version, BLAS kernel, thread count, whether bf16 matmuls can run, MPI\n"
            "  --threads N   threads for any command (default: OMP_NUM_THREADS, else all cores)\n",
            GF_VERSION);
}

/* OpenBLAS chose its kernel as it loaded, before main, from OPENBLAS_CORETYPE or by itself. A kernel this CPU
 * cannot run (OPENBLAS_CORETYPE=SKYLAKEX on a CPU without AVX-512) would stop the first matmul with SIGILL:
 * the fastest core type the CPU runs replaces it, saying so (1: OPENBLAS_CORETYPE changed). */
static int fix_unrunnable_kernel(void) {
    const char *core = gf_blas_kernel(), *set = getenv("OPENBLAS_CORETYPE");
    char why[160];
    const char *use = core ? gf_blas_core_check(core, why, sizeof why) : NULL;
    if (!use) return 0;
    char chosen[96];
    if (set) snprintf(chosen, sizeof chosen, "OPENBLAS_CORETYPE=%.60s", set);
    else snprintf(chosen, sizeof chosen, "chosen by OpenBLAS");
    fprintf(stderr, "grassflow: note: OpenBLAS's %s kernel (%s) needs %s, which this CPU lacks: its first matmul would "
            "stop with an illegal instruction; running with %s%s instead\n", core, chosen, why,
            use[0] ? "OPENBLAS_CORETYPE=" : "OPENBLAS_CORETYPE unset", use);
    if (use[0]) setenv("OPENBLAS_CORETYPE", use, 1);
    else unsetenv("OPENBLAS_CORETYPE");
    return 1;
}

/* Debian's OpenBLAS does not recognise recent Xeons and falls back to its slow generic "Prescott"
 * kernel unless OPENBLAS_CORETYPE is set before the library loads: on a CPU with AVX-512 or AVX2, the
 * right core type (1 if it set one). A core type the user set is kept, if the CPU runs it. */
static int fix_openblas_kernel(void) {
    if (fix_unrunnable_kernel()) return 1;
    if (getenv("OPENBLAS_CORETYPE")) return 0;
    const char *core = gf_blas_kernel();
    if (!core || strcmp(core, "Prescott") != 0) return 0;
    const char *want = gf_blas_fast_core();
    if (strcmp(want, "SKYLAKEX") && strcmp(want, "HASWELL")) return 0;
    setenv("OPENBLAS_CORETYPE", want, 1);
    return 1;
}

/* OpenMP's idle threads spin before they sleep (libgomp: 300,000 rounds by default): on a core another
 * process is busy on, that spinning takes its time slices, and training ran at a third of its speed or
 * less (docs/bench/shared-machine.md). 10,000 rounds cost nothing on a quiet machine and give back most of
 * it on a shared one. Unless the user chose a waiting policy (OMP_WAIT_POLICY, GOMP_SPINCOUNT): 1 if set. */
static int fix_openmp_spin(void) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return 0;
    setenv("GOMP_SPINCOUNT", GF_CLI_SPINCOUNT, 1);
    return 1;
}

/* Both settings are read when the libraries load, before main: a grassflow that needs either starts
 * itself again, once, with them set (GRASSFLOW_NO_REEXEC turns this off). The restarted process finds them
 * set; and GRASSFLOW_REEXECED, which it removes from its environment at once, keeps it from starting itself
 * a third time whatever it finds. */
static void fix_environment(char **argv) {
    if (getenv("GRASSFLOW_REEXECED")) {
        unsetenv("GRASSFLOW_REEXECED");
        return;
    }
    if (getenv("GRASSFLOW_NO_REEXEC")) return;
    const int kernel = fix_openblas_kernel(), spin = fix_openmp_spin();
    if (!kernel && !spin) return;
    setenv("GRASSFLOW_REEXECED", "1", 1);
    execv("/proc/self/exe", argv);
    unsetenv("GRASSFLOW_REEXECED");
    /* exec failed: carry on as we are, and say what that costs */
    if (kernel)
        fprintf(stderr, "grassflow: warning: could not start again with OPENBLAS_CORETYPE=%s (%s): OpenBLAS keeps the "
                        "kernel it loaded (a generic one is about 10x slower; one this CPU cannot run ends in an error "
                        "before the first matmul)\n", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset",
                strerror(errno));
}

/* --threads N (anywhere on the command line, for every command): OpenMP and BLAS threads. Removed
 * from argv so that the commands never see it. Returns -1 on a bad value. */
static int take_threads(int *argc, char **argv) {
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        int used = 0;
        if (!strcmp(argv[i], "--threads") && i + 1 >= *argc) {
            fprintf(stderr, "grassflow: --threads expects a number of threads in [1, 1024], and none was given\n");
            return -1;
        }
        if (!strcmp(argv[i], "--threads")) v = argv[i + 1], used = 2;
        else if (!strncmp(argv[i], "--threads=", 10)) v = argv[i] + 10, used = 1;
        if (!used) continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1024) {
            fprintf(stderr, "grassflow: --threads expects a number of threads in [1, 1024], got '%s'\n", v);
            return -1;
        }
        gf_set_threads((int)n); /* OpenMP's and BLAS's */
        for (int k = i; k + used <= *argc; k++) argv[k] = argv[k + used];
        *argc -= used;
        i--;
    }
    return 0;
}

/* GRASSFLOW_MAX_TEXT=BYTES: the most text a corpus file may hold (default: by memory; gf_corpus_set_max_text). */
static int take_max_text(void) {
    const char *e = getenv("GRASSFLOW_MAX_TEXT");
    if (!e || !*e) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(e, &end, 10);
    if (errno || *end || v < 1 || v > (1LL << 40)) {
        fprintf(stderr, "grassflow: GRASSFLOW_MAX_TEXT expects a number of bytes in [1, 2^40], got '%s'\n", e);
        return 1;
    }
    gf_corpus_set_max_text((size_t)v);
    return 0;
}

/* The command's exit code. */
static int run(int argc, char **argv) {
    if (take_threads(&argc, argv) || take_max_text()) return EXIT_USAGE;
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        const char *wait = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
        printf("grassflow %s\nblas: OpenBLAS, kernel %s, %d threads\nopenmp threads: %d, idle threads wait: %s%s%s\n",
               GF_VERSION, gf_blas_kernel(), gf_blas_threads(), gf_threads(), wait ? "OMP_WAIT_POLICY=" : "",
               wait ? wait : spin ? "GOMP_SPINCOUNT=" : "the OpenMP runtime's default", wait ? "" : spin ? spin : "");
        printf("fp32 matmuls: %s\nfp32-fast attention: %s\n", gf_fp32_matmul(), gf_attention_fast_kernel());
        const char *why = gf_precision_unavailable(GF_PRECISION_BF16);
        if (why) printf("bf16 matmuls: unavailable: %s\n", why);
        else printf("bf16 matmuls: oneDNN, CPU ISA %s\n", gf_bf16_isa());
        if (gf_dist_library()) printf("mpi: %s, rank %d of %d\n", gf_dist_library(), gf_dist_rank(), gf_dist_size());
        else printf("mpi: not built in (one process; install libopenmpi-dev and rebuild for mpirun)\n");
        return EXIT_OK;
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "init")) return cmd_init(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "score")) return cmd_score(argc - 1, argv + 1);
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare")) return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "search")) return cmd_search(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate")) return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(cmd, "data")) return cmd_data(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "features")) return cmd_features(argc - 1, argv + 1);
    if (!strcmp(cmd, "predict")) return cmd_predict(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot")) return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect")) return cmd_inspect(argc - 1, argv + 1);
    fprintf(stderr, "grassflow: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    fix_environment(argv);
    setenv("GRASSFLOW_DATA", cli_data_dir(), 0); /* where an importer finds a vocabulary its format lacks */
    if (gf_dist_init(&argc, &argv)) { /* under mpirun: one rank of the job (docs/distributed.md) */
        fprintf(stderr, "grassflow: error: %s\n", gf_last_error());
        return EXIT_FAILURE;
    }
    /* a data-parallel job's results and progress: rank 0's (the others' errors still reach stderr) */
    if (gf_dist_rank() != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "grassflow: error: rank %d: cannot open /dev/null for its output\n", gf_dist_rank());
        gf_dist_abort(EXIT_FAILURE);
        return EXIT_FAILURE;
    }
    cli_test_start_delay();
    cli_stdout_init();
    /* every command's results, its --help and --version go to stdout: a write that failed (a full disk,
     * /dev/full, a closed pipe) makes the exit code 1, never a silent 0 with the output cut short */
    const int rc = cli_stdout_close(run(argc, argv));
    /* an error on one rank: the others may wait in a collective for it, so the job ends here (a stop by a
     * signal is agreed by every rank at a step boundary, and they finish together) */
    if (rc != EXIT_OK && rc < 128) gf_dist_abort(rc);
    gf_dist_finalize();
    return rc;
}
