/* Heat maps (grassflow inspect's figures): a grid of coloured cells with a label at each row and column (every
 * one where the cells are tall or wide enough to hold a line of text, else every few), a colour scale with its
 * legend under the grid, and a tooltip (<title>) on each cell with its row, column and value. Panels are laid out
 * in rows in one figure (heat_figure_draw), drawn on plot_svg.c's pieces (the file's start, escaping, the atomic
 * write). */
#ifndef GF_CLI_PLOT_HEAT_H
#define GF_CLI_PLOT_HEAT_H

#include <stdbool.h>
#include <stdio.h>

/* A colour scale: sequential from lo (white) to hi (dark blue), or diverging around 0 from -span (blue) through
 * white to +span (red). */
typedef struct heat_scale {
    double lo, hi;
    bool diverging;
} heat_scale;

typedef struct heat_panel {
    const char *title;                 /* above the grid (NULL: none) */
    int rows, cols;
    const float *v;                    /* rows x cols, row-major, read at v[r * stride + c]; NaN: an empty cell
                                        * (grey: no value there, as a token without a partner at D) */
    int stride;
    const char *const *row_labels;     /* rows of them, or NULL: none (a panel beside one that has them) */
    const char *const *col_labels;     /* cols of them, or NULL */
    const char *row_name, *col_name;   /* what the rows and columns are ("token", "offset D"); NULL: none */
    const char *value_name;            /* what a cell's colour says, in the legend and the tooltips */
    heat_scale scale;
    int cell_w, cell_h;                /* pixels */
    int label_chars;                   /* the row labels' band holds at least this many characters (0: as long as
                                        * the longest): panels stacked with their grids aligned */
} heat_panel;

/* The scale of the finite values of p (lo 0 and hi their largest for a sequential one, at least tiny; the
 * largest magnitude both ways for a diverging one). */
heat_scale heat_fit(const float *v, int rows, int cols, int stride, bool diverging, bool from_zero);

enum { HEAT_MAX_PANELS = 16 };
typedef struct heat_figure {
    const char *title, *subtitle;      /* the first line (bold) and the second (small); NULL: none */
    int n, per_row;                    /* panels, and how many share a row of the figure */
    heat_panel panels[HEAT_MAX_PANELS];
} heat_figure;

/* The figure into f (the whole SVG). */
int heat_figure_draw(FILE *f, const void *fig);

#endif
