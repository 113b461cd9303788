/* grassflow data stats: what a corpus looks like (once tokenized, or as pairs), as its task reports it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "task_flags.h"

static void help(void) {
    printf("usage: grassflow data stats --corpus C [--task T] [--tokenizer T] [--json] [--no-cache]\n\n"
           "What each split of a task's data holds, as the task counts it (a text corpus: lines, tokens, words as\n"
           "eval counts them for perplexity per word (docs/model.md), tokens for unknown text (<unk>, [UNK]) and\n"
           "the vocabulary; sentence pairs: pairs and labels, and the rows dropped). The task is the one whose data\n"
           "--corpus names (--task T: that one), else the first.\n\n"
           "  --corpus C      the data; --tokenizer T the tokenizer it is read with (what each task takes:\n"
           "                  below)\n"
           "  --task T        the task to read --corpus as (default: the one whose data it is, else the first)\n"
           "  --json          the same as one JSON object on one line\n"
           "  --no-cache      neither read nor write the cache of the prepared data\n");
    cli_task_help_data();
}

/* The task whose data spec names: the one that owns it, else the first (the language model on a text). */
static const gf_task_ops *task_of(const char *spec) {
    for (int i = 0; i < gf_task_count(); i++) {
        const gf_task_ops *t = gf_task_at(i);
        if (t->owns && t->owns(spec, cli_data_dir())) return t;
    }
    return gf_task_at(0);
}

int cmd_data(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "stats") && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")))
        return cli_usage_error("data", "expected a subcommand: stats");
    if (strcmp(argv[1], "stats")) {
        help();
        return EXIT_OK;
    }
    static const struct option longopts[] = {{"corpus", 1, 0, 'c'}, {"tokenizer", 1, 0, 't'}, {"json", 0, 0, 'j'},
                                             {"no-cache", 0, 0, 'n'}, {"task", 1, 0, 'T'}, {"help", 0, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *spec = NULL, *tok = NULL, *task = NULL;
    int json = 0, no_cache = 0, opt;
    optind = 1;
    argc--;
    argv++;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': spec = optarg; break;
        case 't': tok = optarg; break;
        case 'j': json = 1; break;
        case 'n': no_cache = 1; break;
        case 'T': task = optarg; break;
        case 'h': help(); return EXIT_OK;
        default: return cli_usage_error("data stats", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("data stats", "unexpected argument '%s'", argv[optind]);
    if (!spec) return cli_usage_error("data stats", "--corpus is required");
    const gf_task_ops *t = task ? cli_task_find(task, "data stats") : task_of(spec);
    if (!t) return EXIT_USAGE;
    gf_task_env e = {.corpus = spec, .tokenizer = tok ? tok : "", .no_cache = no_cache, .data_dir = cli_data_dir(),
                     .cache_dir = cli_cache_dir(), .splits = (1u << GF_TRAIN) | (1u << GF_VALID) | (1u << GF_TEST)};
    char *text = NULL;
    int rc = gf_task_stats(t, &e, json, &text);
    if (rc == GF_TASK_NOT_APPLICABLE) return cli_usage_error("data stats", "%s", gf_last_error());
    if (rc) return cli_error("%s", gf_last_error());
    fputs(text, stdout);
    free(text);
    return EXIT_OK;
}
