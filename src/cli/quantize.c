/* grassflow quantize: a checkpoint with its weight matrices int8 or bf16, for generation. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static void help(void) {
    printf("usage: grassflow quantize --ckpt FILE --weights int8|bf16 --out FILE [--force]\n\n"
           "Write the checkpoint with its weight matrices (the 2-D trainable tensors but the position and\n"
           "segment tables; the token embedding, so a tied head, is one) as int8 (I8 codes in [-127, 127]\n"
           "and F32 scales NAME.scale, one per row: w = q * scale) or bf16 (BF16); biases, LayerNorms and\n"
           "buffers stay F32, and the tokenizer and training recipe are kept. The layout is written in the\n"
           "file (__metadata__[\"weights_layout\"]). generate, eval and score read such a file with its\n"
           "weights as they are (generate --weights int8 on the fp32 file runs the same model).\n\n"
           "  --ckpt FILE       an fp32 checkpoint (best.safetensors, last.safetensors, init's files)\n"
           "  --weights W       int8 or bf16\n"
           "  --out FILE        where to write it (atomically; an existing file only with --force)\n"
           "  --force           replace an existing --out file\n");
}

int cmd_quantize(int argc, char **argv) {
    static const struct option longopts[] = {{"ckpt", 1, 0, 'c'}, {"weights", 1, 0, 'W'}, {"out", 1, 0, 'o'},
                                             {"force", 0, 0, 'f'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *in = NULL, *out = NULL;
    gf_weights w = GF_WEIGHTS_FP32;
    int opt, rc, force = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': in = optarg; break;
        case 'W': /* int8 or bf16, as the help says: fp32 is what quantize reads, not what it writes */
            if (strcmp(optarg, "int8") && strcmp(optarg, "bf16"))
                return cli_usage_error("quantize", "--weights expects int8 or bf16, not '%s'%s", optarg,
                                       strcmp(optarg, "fp32") ? "" : ": quantize reads an fp32 checkpoint and writes its "
                                       "weight matrices as int8 or bf16");
            if ((rc = cli_weights_option("quantize", optarg, &w))) return rc;
            break;
        case 'o': out = optarg; break;
        case 'f': force = 1; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage_error("quantize", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("quantize", "unexpected argument '%s'", argv[optind]);
    if (!in || !out) return cli_usage_error("quantize", "--ckpt FILE and --out FILE are required");
    if (w == GF_WEIGHTS_FP32) return cli_usage_error("quantize", "--weights int8 or --weights bf16 is required (none given)");
    const char *inputs[] = {in};
    if (cli_output_check(out, "--out", inputs, 1, force, "give --force to replace it"))
        return cli_error("%s", gf_last_error());
    if (gf_checkpoint_quantize(in, out, w)) return cli_error("%s", gf_last_error());
    printf("%s: %s weights from %s\n", out, gf_weights_name(w), in);
    return EXIT_OK;
}
