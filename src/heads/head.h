/* The head registry: the built-in heads (one per task) and those added with gf_head_register.
 *
 * What a head is (gf_head_ops: its config keys, tensors, outputs, loss and gradient, what it counts) is
 * public, in include/grassflow.h, "Plug-ins: mixers and heads"; what a table must satisfy is checked in
 * plugin/plugin.h. A new head is one source file and one line in src/heads/head.c, or a call to
 * gf_head_register. */
#ifndef GF_HEADS_HEAD_H
#define GF_HEADS_HEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow_plugin.h"
#include "plugin/plugin.h"

/* The head called name ("next_token", "classify"; "lm", next_token's name in config formats 1 and 2), NULL if
 * none. */
const gf_head_ops *gf_head_find(const char *name);
/* Registered heads: i in [0, gf_head_count()), the built-ins first. */
int gf_head_count(void);
const gf_head_ops *gf_head_at(int i);
/* Check head i as gf_head_register checks a new one (gf_head_ops_check), against the heads before it: tests
 * run every built-in through it. 0 or -1 (gf_last_error). */
int gf_head_check_at(int i);
/* The config's head (its task), NULL if unknown. */
const gf_head_ops *gf_config_head(const gf_config *cfg);

#endif
