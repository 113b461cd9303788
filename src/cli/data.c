/* grassflow data stats: what a corpus looks like once tokenized. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"

static void help(void) {
    printf("usage: grassflow data stats --corpus C [--tokenizer T] [--json] [--no-cache]\n\n"
           "Lines and tokens of each split and the vocabulary size.\n\n"
           "  --corpus C      wikitext-2 | tinyshakespeare | a directory with train/valid/test | a text file\n"
           "  --tokenizer T   word | char | byte | wordpiece:VOCAB (default: word for wikitext-2, else char)\n");
}

int cmd_data(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "stats") && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")))
        return cli_usage_error("data", "expected a subcommand: stats");
    if (strcmp(argv[1], "stats")) {
        help();
        return EXIT_OK;
    }
    static const struct option longopts[] = {{"corpus", 1, 0, 'c'}, {"tokenizer", 1, 0, 't'}, {"json", 0, 0, 'j'},
                                             {"no-cache", 0, 0, 'n'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *spec = NULL, *tok = NULL;
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
        case 'h': help(); return EXIT_OK;
        default: return cli_usage_error("data stats", "unknown option");
        }
    }
    if (optind < argc) return cli_usage_error("data stats", "unexpected argument '%s'", argv[optind]);
    if (!spec) return cli_usage_error("data stats", "--corpus is required");
    gf_corpus *c = gf_corpus_load(spec, cli_data_dir(), tok, NULL, no_cache ? NULL : cli_cache_dir());
    if (!c) return cli_error("%s", gf_last_error());
    if (c->cache_note[0]) fprintf(stderr, "grassflow: %s\n", c->cache_note);
    if (json) {
        printf("{\"corpus\": \"%s\", \"tokenizer\": \"%s\", \"vocab_size\": %lld", spec, gf_tok_kind_name(c->tok->kind),
               (long long)c->tok->vocab.n);
        for (int s = 0; s < 3; s++)
            printf(", \"%s\": {\"lines\": %lld, \"tokens\": %lld}", gf_split_name(s), (long long)c->lines[s],
                   (long long)c->split[s].n);
        printf("}\n");
    } else {
        printf("corpus %s, tokenizer %s, vocabulary %lld\n", spec, gf_tok_kind_name(c->tok->kind),
               (long long)c->tok->vocab.n);
        for (int s = 0; s < 3; s++)
            printf("  %-6s %10lld lines %12lld tokens\n", gf_split_name(s), (long long)c->lines[s],
                   (long long)c->split[s].n);
    }
    gf_corpus_free(c);
    return EXIT_OK;
}
