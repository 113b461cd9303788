#include "core/parallel.h"
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "core/error.h"
#include "core/rng.h"
#include "io/safetensors.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void gf_train_opts_default(gf_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->batch = 32;
    o->seq_len = 128;
    o->epochs = 1;
    o->warmup = 100;
    o->accum = 1;
    o->eval_every = 500;
    o->log_every = 10;
    o->lr = 6e-4f;
    o->min_lr = 6e-5f;
    o->wd = 0.01f;
    o->clip = 1.0f;
    o->beta1 = 0.9f;
    o->beta2 = 0.95f;
    o->eps = 1e-8f;
    o->seed = 1234;
}

/* ---- the recipe as JSON (stored in checkpoints and in the training state) ----------------------------- */

char *gf_train_opts_to_json(const gf_train_opts *o) {
    cJSON *j = cJSON_CreateObject();
#define I(f) cJSON_AddNumberToObject(j, #f, (double)o->f)
#define S(f) cJSON_AddStringToObject(j, #f, o->f)
    I(batch); I(seq_len); I(steps); I(epochs); I(warmup); I(accum); I(eval_every); I(log_every);
    I(lr); I(min_lr); I(wd); I(clip); I(beta1); I(beta2); I(eps);
    cJSON_AddStringToObject(j, "on_nonfinite", o->on_nonfinite == GF_NONFINITE_SKIP ? "skip" : "stop");
    S(out_dir); S(corpus); S(tokenizer); S(model);
#undef I
#undef S
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed); /* exact, beyond 2^53 */
    cJSON_AddStringToObject(j, "seed", seed);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

int gf_train_opts_from_json(const char *json, const char *source, gf_train_opts *o) {
    cJSON *j = cJSON_Parse(json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return gf_fail("%s: the training recipe is not a JSON object", source);
    }
    gf_train_opts_default(o);
    int rc = 0;
    /* every number checked like the command line checks it: a recipe is read from files too */
#define NUM(f, type, lo, hi)                                                                               \
    do {                                                                                                   \
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f);                                         \
        if (!cJSON_IsNumber(it)) {                                                                         \
            rc = gf_fail("%s: the training recipe lacks \"%s\"", source, #f);                               \
        } else if (!(it->valuedouble >= (double)(lo) && it->valuedouble <= (double)(hi)) ||                \
                   ((type)0.5 == 0 && it->valuedouble != floor(it->valuedouble))) {                         \
            rc = gf_fail("%s: the training recipe's \"%s\" is %g; expected %s in [%.15g, %.15g]", source, #f,      \
                         it->valuedouble, (type)0.5 == 0 ? "an integer" : "a number", (double)(lo),         \
                         (double)(hi));                                                                     \
        } else {                                                                                           \
            o->f = (type)it->valuedouble;                                                                  \
        }                                                                                                  \
    } while (0)
#define STR(f)                                                                                             \
    do {                                                                                                   \
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f);                                         \
        if (cJSON_IsString(it)) snprintf(o->f, sizeof o->f, "%s", it->valuestring);                        \
        else rc = gf_fail("%s: the training recipe lacks \"%s\"", source, #f);                             \
    } while (0)
    const double big = (double)(1LL << 52);
    NUM(batch, int64_t, 1, 1 << 20); NUM(seq_len, int64_t, 1, 1 << 24); NUM(steps, int64_t, 0, big);
    NUM(epochs, int64_t, 0, 1000000); NUM(warmup, int64_t, 0, big); NUM(accum, int64_t, 1, 1 << 20);
    NUM(eval_every, int64_t, 0, big); NUM(log_every, int64_t, 1, big);
    NUM(lr, float, 1e-12, 10); NUM(min_lr, float, 0, 10); NUM(wd, float, 0, 10); NUM(clip, float, 0, 1e30);
    NUM(beta1, float, 0, 0.999999); NUM(beta2, float, 0, 0.999999999); NUM(eps, float, 1e-30, 1);
    STR(out_dir); STR(corpus); STR(tokenizer); STR(model);
#undef NUM
#undef STR
    const cJSON *onf = cJSON_GetObjectItemCaseSensitive(j, "on_nonfinite"); /* optional: older runs lack it */
    if (cJSON_IsString(onf) && !strcmp(onf->valuestring, "skip")) o->on_nonfinite = GF_NONFINITE_SKIP;
    else if (onf && !(cJSON_IsString(onf) && !strcmp(onf->valuestring, "stop")))
        rc = gf_fail("%s: the training recipe's \"on_nonfinite\" must be \"stop\" or \"skip\"", source);
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    if (cJSON_IsString(seed)) o->seed = strtoull(seed->valuestring, NULL, 10);
    else rc = gf_fail("%s: the training recipe lacks \"seed\"", source);
    cJSON_Delete(j);
    return rc;
}

/* ---- schedule and data order --------------------------------------------------------------------------- */

double gf_lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double min_lr) {
    if (step < warmup) return lr * (double)(step + 1) / (double)warmup;
    if (total <= warmup) return lr;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    if (progress > 1.0) progress = 1.0;
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + cos(3.141592653589793 * progress));
}

static int64_t n_blocks(const gf_train_opts *o, int64_t n_train) { return n_train / (o->seq_len + 1); }

int64_t gf_steps_per_epoch(const gf_train_opts *o, int64_t n_train) {
    int64_t per_step = o->batch * o->accum;
    return (n_blocks(o, n_train) + per_step - 1) / per_step;
}

/* The block order of an epoch: a Fisher-Yates shuffle keyed by (seed, epoch). */
static void epoch_order(int64_t *perm, int64_t n, uint64_t seed, int64_t epoch) {
    uint64_t key = gf_key(gf_key(seed, 0xDA7A5EEDull), (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(gf_rand64(key, (uint64_t)i) % (uint64_t)(i + 1));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* ---- evaluation ---------------------------------------------------------------------------------------- */

int gf_evaluate(gf_model *m, const int32_t *ids, int64_t n, int64_t L, int64_t B, double *mean_loss,
                int64_t *n_predicted) {
    if (n < 2) return gf_fail("evaluation split has %lld tokens; at least 2 are needed", (long long)n);
    int32_t *in = malloc((size_t)(B * L) * sizeof *in), *tg = malloc((size_t)(B * L) * sizeof *tg);
    if (!in || !tg) {
        free(in);
        free(tg);
        return gf_fail("out of memory for an evaluation batch");
    }
    gf_model_set_training(m, false, 0, 0);
    const int64_t nblk = (n - 1 + L - 1) / L; /* block k predicts tokens k*L+1 .. k*L+L */
    double total = 0.0;
    int64_t counted = 0;
    int rc = 0;
    for (int64_t k0 = 0; k0 < nblk && !rc; k0 += B) {
        int64_t nb = nblk - k0 < B ? nblk - k0 : B;
        /* the last block may be short: pad it and ignore the padding */
        int64_t here = 0;
        for (int64_t b = 0; b < nb; b++) {
            int64_t start = (k0 + b) * L, len = n - 1 - start < L ? n - 1 - start : L;
            for (int64_t t = 0; t < L; t++) {
                in[b * L + t] = t < len ? ids[start + t] : 0;
                tg[b * L + t] = t < len ? ids[start + t + 1] : -1;
            }
            here += len;
        }
        float loss;
        rc = gf_model_forward(m, in, tg, nb, L, &loss);
        if (!rc) {
            total += (double)loss * (double)here;
            counted += here;
        }
    }
    free(in);
    free(tg);
    if (rc) return rc;
    *mean_loss = total / (double)counted;
    if (n_predicted) *n_predicted = counted;
    return 0;
}

/* ---- checkpoints ----------------------------------------------------------------------------------------- */

typedef struct {
    const gf_train_opts *o;
    char *cfg_json, *tok_json, *recipe_json;
} run_meta;

/* Fault injection for the tests (tests/trust.sh): GRASSFLOW_FAULT_NONFINITE=A[-B] makes the loss of
 * steps A..B (1-based) NaN, as a diverging run would. */
static bool injected_nonfinite(int64_t step) {
    static int init = 0;
    static long long a = -1, b = -1;
    if (!init) {
        const char *e = getenv("GRASSFLOW_FAULT_NONFINITE");
        if (e && sscanf(e, "%lld-%lld", &a, &b) < 2) b = a;
        init = 1;
    }
    return step >= a && step <= b;
}

/* A killed run can leave NAME.safetensors.tmp.PID behind (the rename never happened); the files it
 * meant to replace are intact. Remove such leftovers when a run starts in the directory. */
static void remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".safetensors.tmp.")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Write, flush and remove a small file in dir: an unwritable or full directory fails here, before any
 * training time is spent, instead of at the first checkpoint. */
static int probe_out_dir(const char *dir) {
    char path[700];
    snprintf(path, sizeof path, "%s/.grassflow-write-probe.%ld", dir, (long)getpid());
    static const char buf[65536];
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, sizeof buf, f) == sizeof buf && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    if (f) fclose(f);
    unlink(path);
    if (!ok)
        return gf_fail("cannot write in the output directory %s: %s\nHINT: free some space or choose another --out",
                       dir, strerror(err ? err : EIO));
    return 0;
}

static int save_model(gf_model *m, const run_meta *rm, const char *name, int64_t step, double val_loss) {
    char path[700], st[32], vl[64];
    snprintf(path, sizeof path, "%s/%s", rm->o->out_dir, name);
    snprintf(st, sizeof st, "%lld", (long long)step);
    snprintf(vl, sizeof vl, "%.9g", val_loss);
    const char *keys[] = {"tokenizer", "train", "step", "val_loss"};
    const char *vals[] = {rm->tok_json, rm->recipe_json, st, vl};
    return gf_model_save_meta(m, path, keys, vals, 4);
}

static int save_state(gf_model *m, gf_adamw *opt, const run_meta *rm, int64_t step, double best) {
    char path[700], st[32], bv[64];
    snprintf(path, sizeof path, "%s/state.safetensors", rm->o->out_dir);
    snprintf(st, sizeof st, "%lld", (long long)step);
    snprintf(bv, sizeof bv, "%.17g", best);
    int64_t n = gf_model_num_params(m), nt = gf_model_num_trainable(m);
    gf_st_out ts[3] = {
        {.name = "params", .dtype = GF_DT_F32, .ndim = 1, .shape = {n}, .data = gf_model_params(m)},
        {.name = "adam_m", .dtype = GF_DT_F32, .ndim = 1, .shape = {nt}, .data = gf_adamw_m(opt)},
        {.name = "adam_v", .dtype = GF_DT_F32, .ndim = 1, .shape = {nt}, .data = gf_adamw_v(opt)},
    };
    const char *keys[] = {"config", "tokenizer", "train", "step", "best_val_loss", "producer"};
    const char *vals[] = {rm->cfg_json, rm->tok_json, rm->recipe_json, st, bv, "grassflow " GF_VERSION};
    return gf_st_write(path, ts, 3, keys, vals, 6);
}

/* Whether the config JSON of a saved state (any format this version reads) describes the model whose
 * config (in this version's form) is cur_json. */
static bool same_config(const char *saved_json, const char *cur_json, const char *path) {
    gf_config saved;
    if (gf_config_from_json(saved_json, path, &saved)) return false;
    char *s = gf_config_to_json(&saved, false);
    bool same = s && !strcmp(s, cur_json);
    free(s);
    return same;
}

static int load_state(gf_model *m, gf_adamw *opt, const run_meta *rm, int64_t *step, double *best) {
    char path[700];
    snprintf(path, sizeof path, "%s/state.safetensors", rm->o->out_dir);
    gf_st_file *f = gf_st_read(path);
    if (!f) return -1;
    int rc = -1;
    char *cfg = gf_st_metadata(f, "config"), *tok = gf_st_metadata(f, "tokenizer");
    char *st = gf_st_metadata(f, "step"), *bv = gf_st_metadata(f, "best_val_loss");
    int64_t n = gf_model_num_params(m);
    const gf_st_tensor *p = gf_st_find(f, "params"), *mm = gf_st_find(f, "adam_m"), *vv = gf_st_find(f, "adam_v");
    if (!cfg || !tok || !st || !bv || !p || !mm || !vv) {
        gf_fail("%s: not a grassflow training state (missing params, moments or metadata)", path);
        goto done;
    }
    if (!same_config(cfg, rm->cfg_json, path)) {
        gf_fail("%s: the saved run has another model config than the one given\nHINT: resume with the same "
                "--model/--config and --set options, or omit them", path);
        goto done;
    }
    if (strcmp(tok, rm->tok_json) != 0) {
        gf_fail("%s: the saved run used another tokenizer/vocabulary than this corpus gives", path);
        goto done;
    }
    const gf_st_tensor *ts[3] = {p, mm, vv};
    float *dst[3] = {gf_model_params(m), gf_adamw_m(opt), gf_adamw_v(opt)};
    const int64_t want[3] = {n, gf_model_num_trainable(m), gf_model_num_trainable(m)};
    for (int i = 0; i < 3; i++) {
        if (ts[i]->dtype != GF_DT_F32 || ts[i]->numel != want[i]) {
            gf_fail("%s: tensor %s should hold %lld F32 values", path, ts[i]->name, (long long)want[i]);
            goto done;
        }
        memcpy(dst[i], ts[i]->data, (size_t)want[i] * sizeof(float));
    }
    char *end1, *end2;
    errno = 0;
    long long stv = strtoll(st, &end1, 10);
    double bvv = strtod(bv, &end2);
    if (end1 == st || *end1 || errno || stv < 0 || stv > (1LL << 62)) {
        gf_fail("%s: step \"%.40s\" is not a step count (expected an integer >= 0)", path, st);
        goto done;
    }
    if (end2 == bv || *end2 || isnan(bvv)) {
        gf_fail("%s: best_val_loss \"%.40s\" is not a number (expected a loss, or inf before any evaluation)", path, bv);
        goto done;
    }
    for (int i = 0; i < 3; i++)
        for (int64_t k = 0; k < want[i]; k++)
            if (!isfinite(dst[i][k])) {
                gf_fail("%s: tensor %s holds a non-finite value at index %lld; the state is corrupt\nHINT: start "
                        "again, or from last.safetensors", path, ts[i]->name, (long long)k);
                goto done;
            }
    *step = stv;
    *best = bvv;
    gf_adamw_set_steps(opt, *step);
    rc = 0;
done:
    free(cfg);
    free(tok);
    free(st);
    free(bv);
    gf_st_free(f);
    return rc;
}

static void metrics_line(FILE *f, const gf_train_event *e) {
    if (!f) return;
    if (e->kind == GF_EV_STEP)
        fprintf(f, "{\"step\": %lld, \"epoch\": %lld, \"loss\": %.6f, \"lr\": %.6g, \"grad_norm\": %.6g, "
                   "\"tokens_per_s\": %.1f, \"elapsed_s\": %.2f}\n", (long long)e->step, (long long)e->epoch, e->loss,
                e->lr, e->grad_norm, e->tokens_per_s, e->elapsed_s);
    else if (e->kind == GF_EV_EVAL)
        fprintf(f, "{\"step\": %lld, \"val_loss\": %.6f, \"val_ppl\": %.4f, \"best_val_loss\": %.6f, \"is_best\": %s}\n",
                (long long)e->step, e->val_loss, e->val_ppl, e->best_val_loss, e->is_best ? "true" : "false");
    fflush(f);
}

/* ---- the loop --------------------------------------------------------------------------------------------- */

static int check_opts(const gf_train_opts *o, const gf_model *m, int64_t n_train) {
    const gf_config *c = gf_model_config(m);
    if (o->batch < 1) return gf_fail("--batch must be at least 1");
    if (o->seq_len < 1) return gf_fail("--seq-len must be at least 1");
    if (c->pos == GF_POS_LEARNED && o->seq_len > c->max_len)
        return gf_fail("--seq-len %lld is above the model's max_len %lld\nHINT: lower --seq-len or --set max_len=%lld",
                       (long long)o->seq_len, (long long)c->max_len, (long long)o->seq_len);
    if (o->accum < 1) return gf_fail("--accum must be at least 1");
    if (o->log_every < 1 || o->eval_every < 0) return gf_fail("--log-every must be >= 1 and --eval-every >= 0");
    if (!(o->lr > 0) || !(o->min_lr >= 0) || o->min_lr > o->lr) return gf_fail("need 0 <= --min-lr <= --lr, --lr > 0");
    if (n_blocks(o, n_train) < 1)
        return gf_fail("the training split has %lld tokens, fewer than one block of --seq-len + 1 = %lld",
                       (long long)n_train, (long long)(o->seq_len + 1));
    return 0;
}

int gf_train(gf_model *m, const gf_corpus *c, const gf_train_opts *o, bool resume, gf_train_cb cb, void *ctx,
             gf_train_result *res) {
    const gf_ids *train = &c->split[GF_TRAIN], *valid = &c->split[GF_VALID];
    if (check_opts(o, m, train->n)) return -1;
    if (gf_model_config(m)->vocab_size != c->tok->vocab.n)
        return gf_fail("the model's vocab_size %lld differs from the corpus vocabulary (%lld tokens)",
                       (long long)gf_model_config(m)->vocab_size, (long long)c->tok->vocab.n);
    const bool created = mkdir(o->out_dir, 0755) == 0;
    if (!created && errno != EEXIST)
        return gf_fail("cannot create the output directory %s: %s", o->out_dir, strerror(errno));
    if (probe_out_dir(o->out_dir)) {
        if (created) rmdir(o->out_dir); /* a rejected run leaves nothing behind */
        return -1;
    }
    remove_stale_tmp(o->out_dir);

    const int64_t L = o->seq_len, B = o->batch, nblk = n_blocks(o, train->n);
    const int64_t spe = gf_steps_per_epoch(o, train->n);
    const int64_t total = o->steps > 0 ? o->steps : o->epochs * spe;
    run_meta rm = {.o = o};
    rm.cfg_json = gf_config_to_json(gf_model_config(m), false);
    rm.tok_json = gf_tokenizer_to_json(c->tok);
    rm.recipe_json = gf_train_opts_to_json(o);
    gf_adamw *opt = gf_adamw_create(m, (gf_adamw_hparams){.lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2,
                                                          .eps = o->eps, .weight_decay = o->wd});
    int64_t *perm = malloc((size_t)nblk * sizeof *perm);
    int32_t *in = malloc((size_t)(B * L) * sizeof *in), *tg = malloc((size_t)(B * L) * sizeof *tg);
    FILE *mf = NULL;
    int rc = -1;
    if (!rm.cfg_json || !rm.tok_json || !rm.recipe_json || !opt || !perm || !in || !tg) {
        if (opt) gf_fail("out of memory starting training");
        goto done;
    }
    int64_t step = 0;
    double best = INFINITY, last_val = NAN;
    if (resume && load_state(m, opt, &rm, &step, &best)) goto done;
    char mpath[700];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", o->out_dir);
    mf = fopen(mpath, resume ? "a" : "w");
    if (!mf) {
        gf_fail("cannot write %s: %s", mpath, strerror(errno));
        goto done;
    }
    const double t_start = now_s();
    double t_train = 0.0, win_t = 0.0;
    int64_t tokens = 0, win_tokens = 0, cur_epoch = -1;
    double win_loss = 0.0;
    int64_t win_steps = 0, n_bad = 0;
    rc = 0;
    while (step < total) {
        const int64_t epoch = step / spe, bi = step % spe;
        if (epoch != cur_epoch) {
            epoch_order(perm, nblk, o->seed, epoch);
            cur_epoch = epoch;
        }
        const double t0 = now_s();
        /* the step's blocks: perm[bi*B*accum ...], micro-batches of B; the last step of an epoch may be short */
        const int64_t first = bi * B * o->accum;
        int64_t step_blocks = nblk - first < B * o->accum ? nblk - first : B * o->accum;
        const float lr = (float)gf_lr_at(step, total, o->warmup, o->lr, o->min_lr);
        gf_model_zero_grad(m);
        gf_model_set_training(m, true, o->seed, (uint64_t)step);
        double step_loss = 0.0;
        for (int64_t mb = 0; mb * B < step_blocks; mb++) {
            int64_t nb = step_blocks - mb * B < B ? step_blocks - mb * B : B;
            for (int64_t b = 0; b < nb; b++) {
                const int32_t *src = train->v + perm[first + mb * B + b] * (L + 1);
                memcpy(in + b * L, src, (size_t)L * sizeof *in);
                memcpy(tg + b * L, src + 1, (size_t)L * sizeof *tg);
            }
            float loss;
            if (gf_model_forward(m, in, tg, nb, L, &loss)) {
                rc = -1;
                break;
            }
            const double w = (double)nb / (double)step_blocks; /* every block has L targets */
            step_loss += w * loss;
            gf_model_backward_scaled(m, (float)w);
        }
        if (rc) break;
        /* global gradient norm, clipping */
        const float *g = gf_model_grads(m);
        const int64_t np = gf_model_num_trainable(m);
        double ss = 0.0;
#pragma omp parallel for reduction(+ : ss) schedule(static) if (np > GF_PAR_MIN)
        for (int64_t i = 0; i < np; i++) ss += (double)g[i] * g[i];
        const double gnorm = sqrt(ss);
        if (injected_nonfinite(step + 1)) step_loss = NAN;
        const bool skipped = !isfinite(step_loss) || !isfinite(gnorm);
        if (skipped) {
            /* no update from this step; the checkpoints on disk are the last good ones */
            const char *what = !isfinite(step_loss) ? "the loss" : "the gradient norm";
            const double bad = !isfinite(step_loss) ? step_loss : gnorm;
            if (o->on_nonfinite == GF_NONFINITE_STOP || ++n_bad > GF_MAX_NONFINITE_SKIPS) {
                rc = gf_fail("step %lld: %s is %s%s; training stopped. The checkpoints in %s are those of the "
                             "last evaluation before it and are intact.\nHINT: lower --lr, keep --clip on, or "
                             "pass --on-nonfinite skip to skip such steps; resume with: grassflow train --resume %s",
                             (long long)step + 1, what, isnan(bad) ? "NaN" : "infinite",
                             o->on_nonfinite == GF_NONFINITE_SKIP ? " for more than 10 steps in a row" : "",
                             o->out_dir, o->out_dir);
                break;
            }
            gf_train_event e = {.kind = GF_EV_SKIPPED, .step = step + 1, .total_steps = total, .what = what};
            fprintf(mf, "{\"step\": %lld, \"skipped\": \"%s is not finite\"}\n", (long long)step + 1, what);
            if (cb) cb(&e, ctx);
        } else {
            n_bad = 0;
            if (o->clip > 0.0f && gnorm > o->clip) {
                const float s = (float)(o->clip / gnorm);
                float *gw = gf_model_grads(m);
#pragma omp parallel for schedule(static) if (np > GF_PAR_MIN)
                for (int64_t i = 0; i < np; i++) gw[i] *= s;
            }
            gf_adamw_step(opt, m, lr);
        }
        step++;
        const double dt = now_s() - t0;
        t_train += dt;
        tokens += step_blocks * L;
        if (!skipped) {
            win_t += dt;
            win_tokens += step_blocks * L;
            win_loss += step_loss;
            win_steps++;
        }
        if (win_steps && (step % o->log_every == 0 || step == total)) {
            gf_train_event e = {.kind = GF_EV_STEP, .step = step, .total_steps = total, .epoch = epoch,
                                .loss = win_loss / (double)win_steps, .lr = lr, .grad_norm = gnorm,
                                .tokens_per_s = win_tokens / win_t, .elapsed_s = now_s() - t_start};
            e.eta_s = (double)(total - step) * (t_train / (double)tokens) * (double)(B * o->accum * L);
            metrics_line(mf, &e);
            if (cb) cb(&e, ctx);
            win_t = 0.0;
            win_tokens = 0;
            win_loss = 0.0;
            win_steps = 0;
        }
        const bool stop = o->stop_at > 0 && step >= o->stop_at && step < total;
        if ((o->eval_every > 0 && step % o->eval_every == 0) || step == total || stop) {
            double vl;
            if (gf_evaluate(m, valid->v, valid->n, L, B, &vl, NULL)) {
                rc = -1;
                break;
            }
            last_val = vl;
            const bool is_best = vl < best;
            if (is_best) best = vl;
            gf_train_event e = {.kind = GF_EV_EVAL, .step = step, .total_steps = total, .val_loss = vl,
                                .val_ppl = exp(vl), .best_val_loss = best, .is_best = is_best,
                                .elapsed_s = now_s() - t_start};
            metrics_line(mf, &e);
            if (cb) cb(&e, ctx);
            if ((is_best && save_model(m, &rm, "best.safetensors", step, vl)) ||
                save_model(m, &rm, "last.safetensors", step, vl) || save_state(m, opt, &rm, step, best)) {
                rc = -1;
                break;
            }
            gf_train_event s = {.kind = GF_EV_SAVED, .step = step, .path = o->out_dir};
            if (cb) cb(&s, ctx);
        }
        if (stop) {
            gf_train_event s = {.kind = GF_EV_STOPPED, .step = step, .total_steps = total, .path = o->out_dir};
            if (cb) cb(&s, ctx);
            break;
        }
        if (o->interrupt && *o->interrupt && step < total) {
            /* a signal: save what resuming needs (no evaluation, which can take minutes), then stop */
            if (save_model(m, &rm, "last.safetensors", step, last_val) || save_state(m, opt, &rm, step, best)) {
                rc = -1;
                break;
            }
            gf_train_event s = {.kind = GF_EV_INTERRUPTED, .step = step, .total_steps = total, .path = o->out_dir};
            if (cb) cb(&s, ctx);
            rc = GF_TRAIN_INTERRUPTED;
            break;
        }
    }
    if (!rc && res) {
        res->steps = step;
        res->tokens = tokens;
        res->best_val_loss = best;
        res->last_val_loss = last_val;
        res->tokens_per_s = t_train > 0 ? (double)tokens / t_train : 0.0;
        res->train_s = t_train;
        res->wall_s = now_s() - t_start;
    }
    if (!rc && step >= total && cb) {
        gf_train_event e = {.kind = GF_EV_DONE, .step = step, .total_steps = total, .best_val_loss = best,
                            .elapsed_s = now_s() - t_start};
        cb(&e, ctx);
    }
done:
    if (mf) fclose(mf);
    free(perm);
    free(in);
    free(tg);
    gf_adamw_free(opt);
    free(rm.cfg_json);
    free(rm.tok_json);
    free(rm.recipe_json);
    return rc;
}
