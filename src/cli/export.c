/* grassflow export: a grassflow checkpoint in another program's format (an importer's, when it can write it). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "grassflow_plugin.h"

static bool writes(const gf_importer *imp) { return imp->version >= 2 && imp->save; }

static void help(void) {
    printf("usage: grassflow export --to NAME --ckpt FILE --out FILE [--force]\n\n"
           "Write a grassflow checkpoint in another program's format, so that the program that made the format\n"
           "reads it (docs/model.md, \"Importers\"). A model the format cannot hold (another block, other offsets)\n"
           "is refused, naming what differs. The formats grassflow writes:\n");
    for (int i = 0; gf_importer_at(i); i++)
        if (writes(gf_importer_at(i))) printf("  %-14s %s\n", gf_importer_at(i)->name, gf_importer_at(i)->what);
    printf("\n  --to NAME     the format\n"
           "  --ckpt FILE   the checkpoint (or any file grassflow reads as one)\n"
           "  --out FILE    where to write it (atomically; an existing file only with --force)\n"
           "  --force       replace an existing --out file\n");
}

int cmd_export(int argc, char **argv) {
    static const struct option longopts[] = {{"to", 1, 0, 'T'}, {"ckpt", 1, 0, 'c'}, {"out", 1, 0, 'o'},
                                             {"force", 0, 0, 'f'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *to = NULL, *in = NULL, *out = NULL;
    int opt, force = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'T') to = optarg;
        else if (opt == 'c') in = optarg;
        else if (opt == 'o') out = optarg;
        else if (opt == 'f') force = 1;
        else if (opt == 'h') { help(); return EXIT_OK; }
        else return cli_usage_error("export", "unknown option");
    }
    if (optind < argc) return cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
    if (!to || !in || !out) return cli_usage_error("export", "--to NAME, --ckpt FILE and --out FILE are required");
    const gf_importer *imp = NULL;
    char names[256] = "";
    for (int i = 0; gf_importer_at(i); i++) {
        if (!writes(gf_importer_at(i))) continue;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", *names ? ", " : "", gf_importer_at(i)->name);
        if (!strcmp(gf_importer_at(i)->name, to)) imp = gf_importer_at(i);
    }
    if (!imp) return cli_usage_error("export", "--to %s: not a format grassflow writes; those it writes: %s", to, names);
    const char *inputs[] = {in};
    if (cli_output_check(out, "--out", inputs, 1, force, "give --force to replace it")) return cli_error("%s", gf_last_error());
    gf_tokenizer *tok = NULL;
    gf_model *m = cli_load_checkpoint(in, &tok, NULL);
    const int rc = !m || imp->save(m, out) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc) printf("%s: %s, from %s\n", out, imp->label, in);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}
