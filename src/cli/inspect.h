/* grassflow inspect (inspect.c: the command; inspect_svg.c: its figures). */
#ifndef GF_CLI_INSPECT_H
#define GF_CLI_INSPECT_H

#include <stdbool.h>

#include "cli.h"

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

#endif
