/* The command-line front end: thin wrappers over the library, built on include/grassflow.h alone (the
 * Makefile compiles src/cli/ without -Isrc; tests/project/install.sh builds it against an installed copy).
 * Exit codes: 0 ok, 1 runtime or data error, 2 usage error. Results go to stdout, everything else to
 * stderr. */
#ifndef GF_CLI_H
#define GF_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

int cmd_info(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

/* Where the built-in corpora live: $GRASSFLOW_DATA, else data/ next to the executable's build/ directory,
 * else share/grassflow/data beside an installed PREFIX/bin/grassflow, else ./data. */
const char *cli_data_dir(void);
/* Where tokenized corpora are cached: $GRASSFLOW_CACHE, $XDG_CACHE_HOME/grassflow, ~/.cache/grassflow
 * (NULL: none). */
const char *cli_cache_dir(void);
/* gf_checkpoint_load (the checkpoint, its tokenizer and, with train_json, its training recipe). */
gf_model *cli_load_checkpoint(const char *path, gf_tokenizer **tok, char **train_json);
/* --weights W (fp32, bf16, int8) of generate, eval and bench generate into *w; a usage error naming cmd. */
int cli_weights_option(const char *cmd, const char *arg, gf_weights *w);
/* m's matrices made w for generation (gf_model_set_weights; nothing for fp32); an exit code naming what. */
int cli_set_weights(gf_model *m, gf_weights w, const char *what);
/* The piece of token id as a NUL-terminated string (malloc'd; a byte tokenizer's NUL piece is ""), NULL
 * for an id outside the vocabulary or out of memory. */
char *cli_piece(const gf_tokenizer *tok, int32_t id);
/* s as a cell of a table printed on a terminal (gf_escape_term: no control character, padded to width
 * columns) into buf (n > 3 bytes); one that does not fit ends in "...". Returns buf. */
const char *cli_escape_cut(char *buf, size_t n, const char *s, int width);
/* Parse a float flag value; EXIT_USAGE with a message naming the flag on failure. */
int cli_parse_f(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out);

/* The same for a half-open range [lo, lim): lim excluded even after rounding to float. */
int cli_parse_f_below(const char *cmd, const char *flag, const char *s, double lo, double lim, double *out);
/* Copy a flag's text value into dst[cap]; EXIT_USAGE naming the flag when it does not fit (a path is never
 * cut short into another path). */
int cli_copy_arg(const char *cmd, const char *flag, const char *s, char *dst, size_t cap);
/* A perplexity for text output: "inf", scientific from 1e6 (never a 200-digit number), else with
 * `decimals`. cli_warn_ppl warns when it is astronomical (>= 1e6) and far above the vocabulary size. */
const char *cli_ppl(char *buf, size_t n, double ppl, int decimals);
void cli_warn_ppl(double ppl, int64_t vocab);
/* Route stdout through a stream that remembers why a write failed (first thing in main). */
void cli_stdout_init(void);
/* Whether standard output has failed (a full disk, a closed pipe, /dev/full): flushes it and checks its
 * error flag; the first failure is reported on stderr ("grassflow: error: writing standard output: ...").
 * A command that prints as it goes (generate --stream, row by row) calls it to stop early. */
bool cli_stdout_failed(void);
/* At the end of main: flush and close standard output; EXIT_RUNTIME (after the message) when any write to
 * it failed and rc was EXIT_OK, else rc. Output that failed is a failure. */
int cli_stdout_close(int rc);
/* Print "grassflow: MESSAGE" to stderr and return EXIT_RUNTIME. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* arg as one word of a shell command line, appended at dst + *len (cap bytes in all; *len grows, and past cap
 * the text is cut): as it is when every byte is one a shell passes through, else in single quotes (a ' as '\''),
 * after a space unless *len is 0. What resumes a compare or a search is printed with it. */
void cli_shell_word(char *dst, size_t cap, size_t *len, const char *arg);
/* Print "grassflow CMD: MESSAGE" plus a pointer to --help and return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A path (or a name) the run's recipe records: each checkpoint's header is JSON, which holds UTF-8 text, so
 * one that is not valid UTF-8 is a usage error naming the flag, the path (escaped) and the byte, before
 * anything is written. NULL passes. */
int cli_utf8_arg(const char *cmd, const char *flag, const char *s);
/* The one rule for a file a command writes at a path the user gave (`flag` names it, e.g. "--out"): a path
 * that exists must be a regular file (never a device node, a FIFO or a directory, whatever else is given),
 * must not be the same file as any of inputs[0..n_inputs) (the files the command reads, compared by device
 * and inode, so another spelling or a hard link is caught; NULL entries are skipped), and is replaced only if
 * may_replace (the command's contract: --force, or a file of the kind it writes); replace_hint says how to
 * have it replaced (e.g. "give --force to replace it"), NULL if nothing does. 0, or -1 (gf_fail). The library's
 * own writes (checkpoints, states, summaries) refuse a path that is not a regular file by themselves. */
int cli_output_check(const char *path, const char *flag, const char *const *inputs, int n_inputs, bool may_replace,
                     const char *replace_hint);
/* Parse a non-negative integer flag value; EXIT_USAGE with a message naming the flag on failure. */
int cli_parse_i64(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);
/* A comma list (--seeds 1,2,3) copied into buf (cap bytes) and cut into items[0..*n), at most max of them
 * (what they are: "seeds", for the message): an empty item (1,,2 or a trailing comma), an item given twice (as
 * text), more than max items or a list longer than buf are usage errors naming the flag; what each item must
 * be is the caller's to check. */
int cli_split_list(const char *cmd, const char *flag, const char *arg, char *buf, size_t cap, char **items, int max,
                   const char *what, int *n);

/* The options that pick a model: --model PRESET | --config FILE, --vocab N, --set KEY=VALUE... */
typedef struct cli_model_opts {
    const char *preset, *config_path;
    int64_t vocab;
    int n_sets;
    const char *sets[64];
} cli_model_opts;
/* Handle one of those options (getopt code `opt` with `arg`); 1 if it was one, 0 if not, or an exit
 * code (>= 2) on a usage error. */
int cli_model_option(cli_model_opts *o, const char *cmd, int opt, const char *arg);
/* Build the config; returns EXIT_OK, or an exit code after printing the error. */
int cli_model_config(const cli_model_opts *o, const char *cmd, gf_config *cfg);
/* The same in two parts, for a command that changes the config in between (a task, before the --set
 * options are checked against it): the preset or file with --vocab, then the --set options. */
int cli_model_base(const cli_model_opts *o, const char *cmd, gf_config *cfg);
int cli_model_sets(const cli_model_opts *o, const char *cmd, gf_config *cfg);

/* getopt codes for the shared model options */
enum { OPT_MODEL = 1000, OPT_CONFIG, OPT_VOCAB, OPT_SET, OPT_JSON, OPT_HELP_DUMMY };
#define CLI_MODEL_LONGOPTS                                                                                 \
    {"model", required_argument, 0, OPT_MODEL}, {"config", required_argument, 0, OPT_CONFIG},              \
        {"vocab", required_argument, 0, OPT_VOCAB}, {"set", required_argument, 0, OPT_SET}
/* The model options' help (--model lists every preset of the registry: gf_preset_names, one source). */
void cli_model_help(void);
/* Every preset's name, comma-separated, wrapped to lines that start with indent and stay within 100
 * columns (the first line starts at column first). */
void cli_print_presets(const char *indent, int first);

#endif
