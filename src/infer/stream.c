/* Streaming inference: one token per call, each layer carrying only what its mixer needs from the past
 * (gf_mixer_ops in grassflow.h: state_floats, step). Each block runs through the same interpreter as the batch forward
 * (model/block.h) over one row, with the mixer's step in place of its forward and no dropout; the wiring
 * around the blocks (the embedding, a further stack's in_proj, ln_f and the head) is the batch's own too
 * (model/wiring.c), over that row. tests/unit/test_stream.c holds every position's logits to gf_model_forward on
 * the same prefix. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compute/parallel.h"
#include "base/mem.h"
#include "infer/source_memory.h"
#include "model/model_internal.h"
#include "ops/ops.h"
#include "base/clock.h"

/* What the stream has measured of its tokens' speed on one thread ([0]) and on all the threads set ([1]). */
typedef struct {
    double ns[2];    /* a running mean of a token's nanoseconds; 0 before the first */
    int best;        /* the faster so far */
    int64_t seen;    /* tokens with logits timed since the last trial of the slower */
    int64_t period;  /* tokens between trials */
    int trials_left; /* tokens left in the trial under way */
} gf_stream_pace;

struct gf_stream {
    const gf_model *m;
    const gf_source_memory *mem;   /* an encoder-decoder's decoder: the source it reads (NULL: a language model) */
    int first;                     /* the first layer streamed (the decoder's; 0) */
    int64_t pos;                   /* tokens consumed */
    int64_t start;                 /* gf_stream_next: the index in its ids of the first token consumed */
    int64_t cap;                   /* positions the states are sized for */
    float *state[GF_MAX_LAYERS];   /* per layer, state_floats(cap) floats */
    int64_t state_n[GF_MAX_LAYERS];
    float *buf;                    /* per-token buffers (below) */
    int64_t buf_n;
    /* views into buf */
    float *slot[BLOCK_MAX_SLOTS], *hid, *act, *stat, *logits, *mscratch;
    float *emb;                    /* the token's input embedding, for mixers that read it (reads_embeddings) */
    float *csaved, *cscratch;      /* a cross op's (one row over mem) */
    gf_stream_pace pace;           /* the threads a large token runs on (advance) */
};

/* Per-token buffers for capacity cap: the block slots (d each) | hid, act (d_ff) | LayerNorm mean and
 * rstd (2) | logits (V) | the largest mixer step scratch | a cross op's saved and scratch (over mem). */
static int64_t buf_floats(const gf_model *m, int64_t cap, float *base, gf_stream *s) {
    const gf_config *c = &m->cfg;
    int64_t off = 0, ms = 0;
#define TAKE(ptr, n)                                                                                       \
    do {                                                                                                   \
        if (base) s->ptr = base + off;                                                                     \
        off += ((n) + 15) / 16 * 16;                                                                       \
    } while (0)
    int64_t dmax = 0, fmax = 0;
    for (int k = 0; k <= c->n_stacks; k++) {
        dmax = gf_stack_dim(c, k) > dmax ? gf_stack_dim(c, k) : dmax;
        fmax = gf_stack_ff(c, k) > fmax ? gf_stack_ff(c, k) : fmax;
    }
    for (int k = 0; k < BLOCK_MAX_SLOTS; k++) TAKE(slot[k], dmax);
    TAKE(hid, fmax);
    TAKE(act, fmax);
    TAKE(stat, 2);
    TAKE(emb, dmax);
    TAKE(logits, m->head->out_floats(c, 1, 1));
    for (int l = s->first; l < m->n_layers; l++) {
        int64_t k = m->mixer[l]->step_scratch_floats(c, l, cap);
        ms = k > ms ? k : ms;
    }
    TAKE(mscratch, ms);
    if (s->mem) {
        TAKE(csaved, gf_block_cross_saved_floats(1, dmax, &s->mem->bm, c->cross_heads));
        TAKE(cscratch, gf_block_cross_scratch_floats(1, dmax, &s->mem->bm, c->cross_heads, 1));
    }
#undef TAKE
    return off;
}

/* Size every state and buffer for cap positions, keeping the states' contents (prefix-stable layout). */
/* The layers' state for cap positions must fit in half the memory the process can have: attention's KV
 * cache grows with the text (a Grassmann ring does not), and past that it is an error, not the OOM killer. */
static int state_fits(const gf_stream *s, int64_t cap) {
    const gf_config *c = &s->m->cfg;
    uint64_t total = 0;
    for (int l = s->first; l < s->m->n_layers; l++) total += (uint64_t)s->m->mixer[l]->state_floats(c, l, cap) * sizeof(float);
    if (total <= gf_mem_limit() / 2) return 0;
    return gf_fail("stream: the layers' state for %lld positions would take %.1f MiB, more than half (%.1f MiB) of "
                   "the memory this process can have\nHINT: score or generate shorter texts (split long lines), or "
                   "use a model whose layers keep constant state (Grassmann)", (long long)cap,
                   (double)total / 1048576.0, (double)(gf_mem_limit() / 2) / 1048576.0);
}

static int grow(gf_stream *s, int64_t cap) {
    const gf_config *c = &s->m->cfg;
    if (state_fits(s, cap)) return -1;
    for (int l = s->first; l < s->m->n_layers; l++) {
        int64_t n = s->m->mixer[l]->state_floats(c, l, cap);
        if (n == s->state_n[l]) continue;
        float *p = realloc(s->state[l], (size_t)n * sizeof(float));
        if (!p)
            return gf_fail("out of memory growing the layer %d stream state to %lld positions", l, (long long)cap);
        memset(p + s->state_n[l], 0, (size_t)(n - s->state_n[l]) * sizeof(float));
        s->state[l] = p;
        s->state_n[l] = n;
    }
    int64_t nb = buf_floats(s->m, cap, NULL, s);
    if (nb > s->buf_n) {
        float *b = gf_alloc_floats(nb, "stream buffers");
        if (!b) return -1;
        gf_free(s->buf);
        s->buf = b;
        s->buf_n = nb;
    }
    buf_floats(s->m, cap, s->buf, s);
    s->cap = cap;
    return 0;
}

/* Whether m's layers from first on can stream: 0, or -1 (gf_fail). */
static int check_streamable(const gf_model *m, int first) {
    if (m->ovr_cfg)
        return gf_fail("stream: the model has evaluation-time overrides (gf_model_set_override), which apply to "
                       "batch forwards only\nHINT: score with gf_model_score or gf_evaluate, or clear them first");
    for (int l = first; l < m->n_layers; l++)
        if (!m->mixer[l]->step)
            return gf_fail("stream: layer %d's mixer \"%s\" cannot run one token at a time (it has no streaming "
                           "step)\nHINT: score whole sequences with gf_model_forward (grassflow generate --no-cache)",
                           l, m->mixer[l]->name);
    return 0;
}

static gf_stream *stream_new(const gf_model *m, const gf_source_memory *mem) {
    gf_stream *s = calloc(1, sizeof *s);
    if (!s) {
        gf_fail("out of memory creating a stream");
        return NULL;
    }
    s->m = m, s->mem = mem, s->first = mem ? mem->first : 0;
    /* the states grow by doubling: start small, whatever max_len says (cost follows the input) */
    int64_t cap = m->cfg.pos == GF_POS_LEARNED && m->cfg.max_len < 256 ? m->cfg.max_len : 256;
    if (grow(s, cap)) {
        gf_stream_free(s);
        return NULL;
    }
    return s;
}

gf_stream *gf_stream_create(const gf_model *m) {
    if (check_streamable(m, 0) || gf_model_require_next_token(m, "stream")) return NULL;
    if (m->cfg.direction != GF_CAUSAL || m->cfg.input != GF_INPUT_TOKENS) {
        gf_fail("stream: a model fed one token at a time must be causal and read tokens; this one is %s with %s "
                "inputs", m->cfg.direction == GF_CAUSAL ? "causal" : "bidirectional",
                m->cfg.input == GF_INPUT_TOKENS ? "token" : "vector");
        return NULL;
    }
    return stream_new(m, NULL);
}

bool gf_decoder_streams(const gf_model *m) {
    if (m->cfg.source_vocab < 1 || m->ovr_cfg) return false;
    for (int l = gf_stack_first_layer(&m->cfg, 1); l < m->n_layers; l++)
        if (!m->mixer[l]->step) return false;
    return true;
}

gf_stream *gf_stream_create_decoder(const gf_model *m, const gf_source_memory *mem) {
    if (m->cfg.source_vocab < 1 || !mem) {
        gf_fail("stream: a decoder stream needs an encoder-decoder and its source's memory");
        return NULL;
    }
    if (check_streamable(m, mem->first)) return NULL;
    return stream_new(m, mem);
}

int gf_stream_copy(gf_stream *dst, const gf_stream *src) {
    if (dst->cap < src->cap && grow(dst, src->cap)) return -1;
    for (int l = src->first; l < src->m->n_layers; l++)
        memcpy(dst->state[l], src->state[l], (size_t)src->state_n[l] * sizeof(float));
    dst->pos = src->pos, dst->start = src->start;
    return 0;
}

void gf_stream_free(gf_stream *s) {
    if (!s) return;
    for (int l = 0; l < GF_MAX_LAYERS; l++) free(s->state[l]);
    gf_free(s->buf);
    free(s);
}

void gf_stream_reset(gf_stream *s) {
    for (int l = s->first; l < s->m->n_layers; l++) memset(s->state[l], 0, (size_t)s->state_n[l] * sizeof(float));
    s->pos = 0;
    s->start = 0;
}

int64_t gf_stream_pos(const gf_stream *s) { return s->pos; }

size_t gf_stream_state_bytes(const gf_stream *s) {
    size_t b = 0;
    for (int l = s->first; l < s->m->n_layers; l++) b += (size_t)s->state_n[l] * sizeof(float);
    return b;
}

typedef struct {
    gf_mixer_step ms;
    const gf_mixer_ops *mx;
} step_ctx;

static void mix_step(void *ctx, float *out, const float *inp) {
    step_ctx *c = ctx;
    c->mx->step(&c->ms, out, inp);
}

/* Layer l on the token in slot[0]; leaves the layer's output in slot[0]. */
static void layer_step(gf_stream *s, int l) {
    const gf_model *m = s->m;
    step_ctx sc = {.ms = {.cfg = &m->cfg, .layer = l, .pos = s->pos, .cap = s->cap, .p = m->lp[l].mix,
                          .state = s->state[l], .scratch = s->mscratch},
                   .mx = m->mixer[l]};
    if (s->mem && gf_mixer_reads_memory(m->mixer[l]))
        sc.ms.mem = s->mem->bm.x, sc.ms.S = s->mem->bm.S, sc.ms.mem_work = s->mem->work[l];
    if (gf_mixer_reads_embeddings(m->mixer[l])) sc.ms.emb = s->emb;
    const int k = gf_layer_stack(&m->cfg, l);
    if (gf_layer_enters_stack(&m->cfg, l) && !s->mem) { /* into a further stack: its projection */
        gf_stack_in_proj(m, k, s->slot[1], s->slot[0], 1);
        float *t = s->slot[0];
        s->slot[0] = s->slot[1];
        s->slot[1] = t;
    }
    block_run r = {.kind = m->block[l], .cfg = &m->cfg, .N = 1, .d = gf_layer_dim(&m->cfg, l), .F = gf_stack_ff(&m->cfg, k),
                   .p = &m->lp[l],
                   .h1 = s->hid, .act = s->act,
                   .mean = {s->stat, s->stat, s->stat}, .rstd = {s->stat + 1, s->stat + 1, s->stat + 1}, .mix = mix_step, .mix_ctx = &sc};
    if (gf_block_kind_has_cross(r.kind)) /* a decoder block: the source's keys, computed once */
        r.mem = &s->mem->bm, r.cross_kv = s->mem->kv[l], r.cross_heads = m->cfg.cross_heads,
        r.cross_saved = s->csaved, r.cross_scratch = s->cscratch, r.n_threads = 1;
    const int last = r.kind->n_slots - 1;
    for (int i = 0; i <= last; i++) r.slot[i] = s->slot[i];
    gf_block_forward(&r);
    float *t = s->slot[0]; /* the output becomes the next layer's input */
    s->slot[0] = s->slot[last];
    s->slot[last] = t;
}

/* Run one token through every layer; with_logits also applies the final LayerNorm and the head. */
static int advance_token(gf_stream *s, int32_t token, bool with_logits) {
    const gf_model *m = s->m;
    const gf_config *c = &m->cfg;
    if (token < 0 || token >= c->vocab_size)
        return gf_fail("stream: token id %d is outside the vocabulary [0, %lld)", token, (long long)c->vocab_size);
    if (c->pos == GF_POS_LEARNED && s->pos >= c->max_len)
        return gf_fail("stream: position %lld is past max_len %lld of this model, which has learned positions\n"
                       "HINT: reset the stream, or use a model with pos \"none\" or \"sinusoidal\" (no length limit)",
                       (long long)s->pos, (long long)c->max_len);
    if (s->pos >= s->cap && grow(s, 2 * s->cap)) return -1;
    /* the embedding of one row at position pos (model/wiring.c); the slots are free between tokens */
    const gf_embed_in in = {.ids = &token, .B = 1, .T = 1, .pos = gf_pos_rows(m, s->pos, 1, NULL, s->slot[2])};
    if (s->mem) gf_embed_rows(m, &in, s->slot[0], NULL, NULL, NULL); /* a decoder's target, as enter_decoder */
    else gf_embed_rows(m, &in, s->slot[0], s->slot[1], s->stat, s->stat + 1);
    memcpy(s->emb, s->slot[0], (size_t)m->cfg.d_model * sizeof(float)); /* the slots move through the layers */
    for (int l = s->first; l < m->n_layers; l++) layer_step(s, l);
    if (with_logits) {
        gf_head_call hc = gf_model_head_call(m, 1, 1, s->logits);
        gf_head_result res;
        gf_model_output(m, &hc, s->slot[0], s->slot[1], s->stat, s->stat + 1, &res);
    }
    s->pos++;
    return 0;
}

/* The threads one token runs on. A token multiplies each weight once and reads its layers' states. Below
 * GF_STREAM_PAR_MACS multiply-adds (under a millisecond on one core) it runs on one thread: its parallel
 * regions would be too short to repay their cost, and where another process holds a core each region waits
 * for a thread the kernel has put aside (two threads decoded the 65-character grassmann-small half as fast
 * as one on a quiet machine, and about 4x slower beside a busy neighbour). A larger token runs on whichever
 * of one thread and all the threads set its tokens measured faster: two threads streamed the word-level
 * 6-layer models 1.5-2x faster than one on a quiet machine and 3x slower beside a busy neighbour. The slower
 * choice is tried again on GF_STREAM_TRIAL tokens (the first only wakes its threads) every `period` tokens
 * with logits, the period doubling up to GF_STREAM_PERIOD_MAX while the trials lose. A token's bits are the
 * same on any thread count (its matrix-vector products, compute/gemv.c, sum each output on one thread in one
 * order), so this changes speed, never tokens (test_stream_threads_large). bench/stream_neighbour.sh
 * measures the rule quiet and beside a busy neighbour. */
#define GF_STREAM_PAR_MACS 4000000
#define GF_STREAM_TRIAL 2
#define GF_STREAM_PERIOD_MIN 32
#define GF_STREAM_PERIOD_MAX 1024

static bool token_is_large(const gf_stream *s) {
    int64_t macs = gf_model_num_params(s->m);
    for (int l = s->first; l < s->m->n_layers; l++) macs += s->state_n[l];
    return macs >= GF_STREAM_PAR_MACS && gf_threads() > 1;
}

/* 0: one thread, 1: all the threads set. Only tokens with logits are timed and tried (a fed prompt token
 * costs less). A trial is GF_STREAM_TRIAL tokens of the slower choice, the first only waking its threads. */
static int pace_pick(gf_stream_pace *p, bool timed) {
    if (!timed) return p->best;
    if (p->period == 0) p->period = GF_STREAM_PERIOD_MIN;
    if (p->ns[p->best] == 0.0) return p->best;
    if (p->trials_left == 0 && (p->ns[!p->best] == 0.0 || p->seen >= p->period))
        p->trials_left = GF_STREAM_TRIAL, p->seen = 0;
    return p->trials_left > 0 ? !p->best : p->best;
}

static void pace_note(gf_stream_pace *p, int used, double ns) {
    if (used != p->best && --p->trials_left == GF_STREAM_TRIAL - 1) return; /* the trial's warm-up token */
    p->ns[used] = p->ns[used] == 0.0 || used != p->best ? ns : 0.5 * (p->ns[used] + ns);
    if (used == p->best) {
        p->seen++;
        return;
    }
    if (p->trials_left > 0) return;
    const bool won = ns < p->ns[p->best];
    p->period = won ? GF_STREAM_PERIOD_MIN
                    : (p->period * 2 < GF_STREAM_PERIOD_MAX ? p->period * 2 : GF_STREAM_PERIOD_MAX);
    if (won) p->best = used;
}

static int advance(gf_stream *s, int32_t token, bool with_logits) {
    if (!token_is_large(s)) {
        const int prev = gf_threads_limit(1);
        const int rc = advance_token(s, token, with_logits);
        gf_threads_restore(prev);
        return rc;
    }
    const int use = pace_pick(&s->pace, with_logits);
    const int prev = gf_threads_limit(use ? 0 : 1);
    const double t0 = with_logits ? 1e9 * gf_clock_s() : 0.0;
    const int rc = advance_token(s, token, with_logits);
    if (with_logits && rc == 0) pace_note(&s->pace, use, 1e9 * gf_clock_s() - t0);
    gf_threads_restore(prev);
    return rc;
}

const float *gf_stream_step(gf_stream *s, int32_t token) { return advance(s, token, true) ? NULL : s->logits; }

int gf_stream_score(gf_stream *s, const int32_t *ids, const int32_t *targets, int64_t n, double *total,
                    int64_t *counted) {
    const int64_t V = s->m->cfg.vocab_size;
    int64_t end = n;
    while (end > 0 && targets[end - 1] < 0) end--;
    if (state_fits(s, end)) return -1; /* known before the first step, not after hours of them */
    gf_stream_reset(s);
    for (int64_t t = 0; t < end; t++) {
        const float *lg = gf_stream_step(s, ids[t]);
        if (!lg) return -1;
        if (targets[t] < 0) continue;
        if (targets[t] >= V)
            return gf_fail("stream: target id %d at position %lld is outside the vocabulary [0, %lld)", targets[t],
                           (long long)t, (long long)V);
        *total += gf_log_softmax_nll(lg, V, targets[t]);
        (*counted)++;
    }
    return 0;
}

int gf_stream_feed(gf_stream *s, const int32_t *tokens, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (advance(s, tokens[i], false)) {
            gf_fail_context(" (token %lld of %lld fed)", (long long)i, (long long)n);
            return -1;
        }
    return 0;
}

const float *gf_stream_next(gf_stream *s, const int32_t *ids, int64_t n) {
    const gf_config *c = &s->m->cfg;
    if (n < 1 || s->start + s->pos > n - 1) {
        gf_fail("stream: the logits after %lld ids asked of a stream that has consumed ids [%lld, %lld); expected "
                "ids that extend what it was given, at least one more", (long long)n, (long long)s->start,
                (long long)(s->start + s->pos));
        return NULL;
    }
    if (c->pos == GF_POS_LEARNED && n - s->start > c->max_len) { /* learned positions end at max_len: slide */
        gf_stream_reset(s);
        s->start = n - c->max_len;
    }
    /* the context without logits, then the last token with them */
    const int64_t fed = s->start + s->pos;
    return gf_stream_feed(s, ids + fed, n - 1 - fed) ? NULL : gf_stream_step(s, ids[n - 1]);
}
