/* grassflow data stats: what a corpus looks like once tokenized. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "data/corpus.h"
#include "data/nli_reader.h"
#include "io/json_out.h"

static void help(void) {
    printf("usage: grassflow data stats --corpus C [--tokenizer T] [--json] [--no-cache]\n\n"
           "Lines and tokens of each split and the vocabulary size.\n\n"
           "  --corpus C      wikitext-2 | tinyshakespeare | a directory with train/valid/test | a text file\n"
           "                  | snli | a directory with snli_1.0_{train,dev,test}.{jsonl,txt,tsv}[.xz]: pairs\n"
           "                  and labels of each split (rows labelled - and empty sentences are dropped)\n"
           "  --tokenizer T   word | char | byte | wordpiece:VOCAB (default: word for wikitext-2, else char)\n");
}

/* The --json form of nli_stats (cJSON escapes the paths). */
static int nli_json(const char *spec, const gf_nli_data *d, const char *const *names) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "corpus", spec);
    for (int k = 0; k < 3; k++) {
        const gf_nli_split *s = &d->split[k];
        cJSON *j = cJSON_AddObjectToObject(o, names[k]);
        cJSON_AddStringToObject(j, "file", s->path);
        cJSON_AddStringToObject(j, "format", s->format);
        cJSON_AddNumberToObject(j, "rows", (double)s->rows);
        cJSON_AddNumberToObject(j, "pairs", (double)s->n);
        for (int c = 0; c < GF_NLI_CLASSES; c++) cJSON_AddNumberToObject(j, gf_nli_label_name(c), (double)s->per_label[c]);
        cJSON_AddNumberToObject(j, "no_consensus", (double)s->unlabelled);
        cJSON_AddNumberToObject(j, "empty", (double)s->empty);
    }
    char *txt = cJSON_PrintUnformatted(o);
    const bool made = txt != NULL;
    if (made) printf("%s\n", txt);
    free(txt);
    cJSON_Delete(o);
    return made ? EXIT_OK : cli_error("out of memory printing the statistics as JSON");
}

/* Pairs and labels of each split of an NLI data set. */
static int nli_stats(const char *spec, int json) {
    static const char *const names[3] = {"train", "dev", "test"}; /* SNLI's names for the splits */
    gf_nli_data *d = gf_nli_load(spec, cli_data_dir());
    if (!d) return cli_error("%s", gf_last_error());
    if (json) {
        int rc = nli_json(spec, d, names);
        gf_nli_free(d);
        return rc;
    }
    printf("corpus %s: sentence pairs (rows labelled - and pairs with an empty sentence are dropped)\n", spec);
    for (int k = 0; k < 3; k++) {
        const gf_nli_split *s = &d->split[k];
        printf("  %-6s %8lld pairs  entailment %lld  neutral %lld  contradiction %lld  (of %lld rows: %lld labelled -, "
               "%lld empty)  %s [%s]\n", names[k], (long long)s->n, (long long)s->per_label[0],
               (long long)s->per_label[1], (long long)s->per_label[2], (long long)s->rows, (long long)s->unlabelled,
               (long long)s->empty, s->path, s->format);
    }
    gf_nli_free(d);
    return EXIT_OK;
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
    if (gf_nli_is_spec(spec, cli_data_dir())) {
        if (tok) return cli_usage_error("data stats", "--tokenizer: %s holds sentence pairs, counted before tokenizing", spec);
        return nli_stats(spec, json);
    }
    gf_corpus *c = gf_corpus_load(spec, cli_data_dir(), tok, NULL, no_cache ? NULL : cli_cache_dir());
    if (!c) return cli_error("%s", gf_last_error());
    if (c->cache_note[0]) fprintf(stderr, "grassflow: %s\n", c->cache_note);
    if (json) {
        printf("{\"corpus\": ");
        gf_json_put_str(stdout, spec); /* a path may hold " or \ */
        printf(", \"tokenizer\": \"%s\", \"vocab_size\": %lld", gf_tok_kind_name(c->tok->kind), (long long)c->tok->vocab.n);
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
