/* grassflow: the command-line tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/blas.h"
#include "core/parallel.h"

static void usage(FILE *out) {
    fprintf(out,
            "grassflow %s: attention-free Grassmann-flow language models and their Transformer twins\n\n"
            "usage: grassflow COMMAND [options]     (grassflow COMMAND --help for its options)\n\n"
            "commands:\n"
            "  info    show a model's config and parameter count\n"
            "  init    write a freshly initialised model as a safetensors checkpoint\n"
            "  score   mean next-token cross-entropy and perplexity of a checkpoint on token ids\n"
            "  train   train a model on a corpus (WikiText-2, Tiny Shakespeare, your text)\n"
            "  eval    perplexity of a checkpoint on a corpus split\n"
            "  generate  sample text from a checkpoint\n"
            "  compare train several models with one recipe and tabulate them\n"
            "  data    corpus statistics (grassflow data stats)\n"
            "  bench   throughput of training, of one mixer, of generation (grassflow bench train|mixer|generate)\n\n"
            "  --version   version, BLAS kernel and thread count\n",
            GF_VERSION);
}

/* Debian's OpenBLAS does not recognise recent Xeons and falls back to its slow generic "Prescott"
 * kernel unless OPENBLAS_CORETYPE is set before the library loads. When that happens on a CPU with
 * AVX-512 or AVX2, run again with the right core type (once: the variable then is set). */
static void fix_openblas_kernel(char **argv) {
    if (getenv("OPENBLAS_CORETYPE") || getenv("GRASSFLOW_NO_REEXEC")) return;
    const char *core = gf_blas_kernel();
    if (!core || strcmp(core, "Prescott") != 0) return;
    const char *want = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) want = "SKYLAKEX";
    else if (__builtin_cpu_supports("avx2")) want = "HASWELL";
    if (!want) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the slow kernel, but say so */
    fprintf(stderr, "grassflow: warning: OpenBLAS uses its generic kernel on this CPU (about 10x slower); "
                    "run with OPENBLAS_CORETYPE=%s set\n", want);
}

int main(int argc, char **argv) {
    fix_openblas_kernel(argv);
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
        printf("grassflow %s\nblas: OpenBLAS, kernel %s, %d threads\nopenmp threads: %d\n", GF_VERSION,
               gf_blas_kernel(), gf_blas_threads(), gf_max_threads());
        return EXIT_OK;
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "init")) return cmd_init(argc - 1, argv + 1);
    if (!strcmp(cmd, "score")) return cmd_score(argc - 1, argv + 1);
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare")) return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "generate")) return cmd_generate(argc - 1, argv + 1);
    if (!strcmp(cmd, "data")) return cmd_data(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    fprintf(stderr, "grassflow: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
