/* grassflow import and export: a model another program trained (an importer's format) as a grassflow checkpoint, and
 * back (the importer's save, where it has one). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grassflow_plugin.h"

static void import_help(void) {
    printf("usage: grassflow import [--from NAME] FILE --out FILE.safetensors [--force]\n\n"
           "Read a model another program trained and write it as a grassflow checkpoint (its config, weights and\n"
           "tokenizer), which every command reads: eval, generate, score, inspect, train --init-from.\n"
           "The formats (docs/model.md, \"Importers\"):\n");
    for (int i = 0; gf_importer_at(i); i++) printf("  %-14s %s\n", gf_importer_at(i)->name, gf_importer_at(i)->what);
    printf("\n  --from NAME   the format (default: the one whose detection takes FILE)\n"
           "  --out FILE    where to write it (atomically; an existing file only with --force)\n"
           "  --force       replace an existing --out file\n");
}

static const gf_importer *importer_named(const char *name) {
    for (int i = 0; gf_importer_at(i); i++)
        if (!strcmp(gf_importer_at(i)->name, name)) return gf_importer_at(i);
    return NULL;
}

/* The importer for FILE: --from's, or the first that detects it. */
static int pick(const char *from, const char *in, const gf_importer **imp) {
    char names[512] = "";
    for (int i = 0; gf_importer_at(i); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", gf_importer_at(i)->name);
    if (from && !(*imp = importer_named(from)))
        return cli_usage_error("import", "--from %s: no such format; the formats: %s", from, names);
    for (int i = 0; !from && !*imp && gf_importer_at(i); i++) /* the first, as gf_import_load takes */
        if (gf_importer_at(i)->detect(in)) *imp = gf_importer_at(i);
    if (!*imp) return cli_error("%s: no format takes it (the formats: %s)\nHINT: name one with --from", in, names);
    return EXIT_OK;
}

int cmd_import(int argc, char **argv) {
    static const struct option longopts[] = {{"from", 1, 0, 'F'}, {"out", 1, 0, 'o'}, {"force", 0, 0, 'f'},
                                             {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *from = NULL, *out = NULL;
    int opt, force = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'F') from = optarg;
        else if (opt == 'o') out = optarg;
        else if (opt == 'f') force = 1;
        else if (opt == 'h') { import_help(); return EXIT_OK; }
        else return cli_usage_error("import", "unknown option");
    }
    if (optind + 1 != argc || !out) return cli_usage_error("import", "one FILE and --out FILE are required");
    const char *in = argv[optind];
    const gf_importer *imp = NULL;
    int rc = pick(from, in, &imp);
    const char *inputs[] = {in};
    if (rc || cli_output_check(out, "--out", inputs, 1, force, "give --force to replace it"))
        return rc ? rc : cli_error("%s", gf_last_error());
    gf_tokenizer *tok = NULL;
    gf_model *m = imp->load(in, &tok);
    if (!m) return cli_error("%s", gf_last_error());
    char *tj = tok ? gf_tokenizer_to_json(tok) : NULL;
    const char *keys[] = {"tokenizer"}, *vals[] = {tj};
    rc = (tok && !tj) || gf_model_save_meta(m, out, keys, vals, tj ? 1 : 0) ? cli_error("%s", gf_last_error()) : EXIT_OK;
    if (!rc) {
        printf("%s: %s, %lld parameters, from %s\n", out, imp->label, (long long)gf_model_num_params(m), in);
        if (!tok) printf("note: no tokenizer came with it: grassflow reads it on token ids (score) until it has one\n");
    }
    free(tj);
    gf_tokenizer_free(tok);
    gf_model_free(m);
    return rc;
}

static bool writes(const gf_importer *imp) { return imp->version >= 2 && imp->save; }

static void export_help(void) {
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
        else if (opt == 'h') { export_help(); return EXIT_OK; }
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
