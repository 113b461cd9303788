/* The head interface: what turns the last hidden states into outputs and a loss, one per task.
 *
 * Like a mixer (mixers/mixer.h), a head is a table under a name, the config's "task": its own config
 * (a key table, read from the config's "head" object), its parameters (absolute tensor names, declared
 * after the stacks), its outputs, its loss and gradient, and what it counts (tokens or examples, and
 * how many it got right). A new head is one source file and one line in src/heads/head.c, or a call
 * to gf_head_register. */
#ifndef GF_HEADS_HEAD_H
#define GF_HEADS_HEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "grassflow.h"
#include "mixers/mixer.h"
#include "model/schema.h"

#define GF_HEAD_OPS_VERSION 1
#define GF_HEAD_MAX_PARAMS 4

/* One call of a head on a batch: h (B, T, d) are the last hidden states (after the final LayerNorm). */
typedef struct gf_head_call {
    const gf_config *cfg;
    int64_t B, T;
    float *const *p;        /* parameters in param_specs order */
    float *const *g;        /* their gradients */
    const float *emb;       /* the token embedding (vocab_size, d), for a head tied to it; NULL without one */
    float *demb;            /* its gradient */
    const uint8_t *mask;    /* (B, T): 1 real, 0 padding; NULL: none */
    const int32_t *targets; /* target_count(B, T) ids, -1 = ignored; NULL: no loss */
    float *out;             /* out_floats(B, T): the outputs (logits) */
    float *saved;           /* saved_floats(B, T): kept from forward to backward */
} gf_head_call;

typedef struct gf_head_result {
    double loss_sum;        /* sum of the per-target losses */
    int64_t n_counted;      /* targets that count (not -1) */
    int64_t n_correct;      /* of those, predicted right (argmax); -1 when the head does not count it */
} gf_head_result;

typedef struct gf_head_ops {
    int version;            /* GF_HEAD_OPS_VERSION */
    const char *name;       /* the task's name: "lm", "classify" */
    const char *help;
    size_t config_size;     /* <= GF_HEAD_CONFIG_BYTES */
    const gf_cfg_key *keys;
    int n_keys;
    int (*check)(const gf_config *cfg, const char *src);
    gf_direction direction; /* the direction a model of this task has unless its config says otherwise */
    bool causal_only;       /* the task is wrong for a bidirectional model (next-token prediction) */
    bool next_token;        /* its outputs are next-token logits over the vocabulary at every position:
                             * what streaming, generation and the LM data source need */
    /* How many target ids a batch of (B, T) carries: B*T per position, or B per example. */
    int64_t (*target_count)(int64_t B, int64_t T);
    int (*param_specs)(const gf_config *cfg, gf_param_spec *specs);
    int64_t (*out_floats)(const gf_config *cfg, int64_t B, int64_t T);
    int64_t (*saved_floats)(const gf_config *cfg, int64_t B, int64_t T);
    /* The largest valid target id + 1 (vocab_size, n_classes). */
    int64_t (*n_outputs)(const gf_config *cfg);
    void (*forward)(const gf_head_call *c, const float *h, gf_head_result *res);
    /* dh (B, T, d) += scale * d(sum of losses)/dh; parameter gradients accumulate. Needs a forward with
     * targets; may overwrite c->out. */
    void (*backward)(const gf_head_call *c, const float *h, float *dh, float scale);
} gf_head_ops;

const gf_head_ops *gf_head_find(const char *name);
int gf_head_register(const gf_head_ops *ops);
int gf_head_count(void);
const gf_head_ops *gf_head_at(int i);
/* The config's head (its task), NULL if unknown. */
const gf_head_ops *gf_config_head(const gf_config *cfg);
static inline const void *gf_head_cfg(const gf_config *cfg) { return cfg->head.bytes; }

#endif
