/* grassflow inspect (inspect.c: the command; inspect_svg.c: its figures). */
#ifndef GF_CLI_INSPECT_H
#define GF_CLI_INSPECT_H

#include <stdbool.h>

#include "cli.h"
#include "eval.h"

/* The command line's options beside eval's. */
typedef struct inspect_opts {
    const char *text, *text_file, *out_json, *svg_dir;
    const char *target; /* an encoder-decoder's target for --text (NULL: its greedy decoding) */
    int64_t drop, layer, top_k, svg_tokens;
    int gate; /* -1: not given; 0 or 1 */
    bool layer_given, force;
} inspect_opts;

/* What the figures of an inspection need beside it. */
typedef struct inspect_svg_opts {
    const char *dir;               /* the folder they go to (made if missing) */
    const char *ckpt;              /* named in each figure's subtitle */
    int max_tokens;                /* the first this many tokens are shown (--svg-tokens) */
    bool force;                    /* replace a file there that is not an SVG */
    const char *const *inputs;     /* the files inspect reads (never replaced) */
    int n_inputs;
} inspect_svg_opts;

/* The figures' files of x in o->dir: layerK-gates.svg, -offsets.svg, -plucker.svg (Grassmann layers; no
 * plucker file with plucker false), layerK-attention.svg (attention layers), each checked by the output rule
 * before anything is written (plot_check_out; with write false only checked). pieces: the tokens' text (T).
 * EXIT_OK, or an exit code after the message; the files written are listed on stderr. */
int cli_inspect_svgs(const gf_inspection *x, const char *const *pieces, const inspect_svg_opts *o, bool write);

/* An inspection reported as the command line asks: its outputs checked, then the JSON (--json, --out-json), the
 * figures (--svg-dir), the summary. pieces: the target's text (T), then an encoder-decoder's source's (S). */
int cli_inspect_report(const gf_inspection *x, const char *const *pieces, const eval_args *a, const inspect_opts *o);
/* inspect on encoder-decoder m (inspect_pair.c): --text its source, --target or its greedy decoding the target;
 * the analysis, or with ov the target's loss under that override. rj: the checkpoint's recipe (its task). */
int cli_inspect_pair(gf_model *m, const gf_tokenizer *tok, const char *rj, const eval_args *a, const inspect_opts *o,
                     const cli_override *ov);

#endif
