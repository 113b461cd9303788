/* A training run's directory: checkpoints, the resumable state, metrics.jsonl (formats: run_dir.h). */
#include "train/run_dir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist/comm.h"
#include "base/error.h"
#include "io/file.h"
#include "io/json_out.h"
#include "io/safetensors.h"
#include "train/trainer.h"

/* Whether process pid exists (a signal 0 reaches it, or it is someone else's). */
static bool alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

/* A killed writer can leave NAME.safetensors.tmp.PID behind (the rename never happened); the files it
 * meant to replace are intact. Remove such leftovers whose writer is dead; a live writer's (another
 * command writing into this directory) stay. */
static void remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = strstr(e->d_name, ".safetensors.tmp.");
        char *end;
        long pid = t ? strtol(t + 17, &end, 10) : 0;
        if (!t || *end || alive(pid)) continue;
        char path[GF_PATH_MAX];
        if (gf_path_join(path, sizeof path, dir, e->d_name) == 0) unlink(path);
    }
    closedir(d);
}

/* The error for a run folder whose lock another run holds, which wrote pid (its first line) into it. */
static int busy_msg(const char *dir, char *pid) {
    return gf_fail("%s is in use by another grassflow run (PID %s); two runs in one folder would overwrite each "
                   "other's checkpoints\nHINT: wait for it to finish, or choose another --out", gf_show_name(dir),
                   pid[0] ? strtok(pid, "\n") : "unknown");
}

/* The same for a lock open as fd (closed here). */
static int busy(int fd, const char *dir) {
    char pid[32] = "";
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    close(fd);
    return busy_msg(dir, pid);
}

/* OUT/.grassflow.lock, locked for this run (and removed when it ends); another live run holding it is an
 * error that names its PID. */
static int lock_dir(gf_run_dir *r) {
    char path[GF_PATH_MAX], pid[32] = "";
    if (gf_path_join(path, sizeof path, r->dir, ".grassflow.lock")) return -1;
    int fd = gf_lock_file(path, false, pid, sizeof pid); /* never a FIFO or device planted there */
    if (fd == -2) return busy_msg(r->dir, pid);
    if (fd < 0) {
        gf_fail_context(" (the run lock)");
        return -1;
    }
    char me[32];
    int len = snprintf(me, sizeof me, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me, (size_t)len, 0) != len) {
        const int err = errno ? errno : EIO;
        gf_unlock_file(path, fd);
        return gf_fail_write(err, "cannot write the run lock %s", gf_show_name(path));
    }
    r->lock_fd = fd;
    return 0;
}

/* Write, flush and remove a small file in dir: an unwritable or full directory fails here, before any
 * training time is spent, instead of at the first checkpoint. */
static int probe_out_dir(const char *dir) {
    char path[GF_PATH_MAX], name[64];
    snprintf(name, sizeof name, ".grassflow-write-probe.%ld", (long)getpid());
    if (gf_path_join(path, sizeof path, dir, name)) return -1;
    static const char buf[65536];
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, sizeof buf, f) == sizeof buf && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = ok ? 0 : errno;
    if (f) fclose(f);
    unlink(path);
    err = err ? err : EIO;
    if (!ok)
        return gf_fail("cannot write in the output directory %s: %s\nHINT: %s; or choose another --out", gf_show_name(dir),
                       strerror(err), gf_write_hint(err));
    return 0;
}

static const char *const run_files[] = {"state.safetensors", "last.safetensors", "best.safetensors", "metrics.jsonl"};

/* The step of the last line of metrics.jsonl that has one (-1: none, or no file). */
static long long last_logged_step(const char *dir) {
    char path[GF_PATH_MAX], buf[4096];
    if (gf_path_join(path, sizeof path, dir, "metrics.jsonl")) return -1;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long long step = -1;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long end = ftell(f);
        const long from = end > (long)sizeof buf - 1 ? end - (long)sizeof buf + 1 : 0;
        size_t n = fseek(f, from, SEEK_SET) == 0 ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[n] = '\0';
        for (const char *p = buf; (p = strstr(p, "\"step\": ")); p++) step = strtoll(p + 8, NULL, 10);
    }
    fclose(f);
    return step;
}

int gf_run_dir_holds_run(const char *dir, char *what, size_t size) {
    char path[GF_PATH_MAX], files[256] = "";
    struct stat st;
    for (size_t i = 0; i < sizeof run_files / sizeof *run_files; i++)
        if (!gf_path_join(path, sizeof path, dir, run_files[i]) && lstat(path, &st) == 0)
            snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s%s", files[0] ? ", " : "", run_files[i],
                     S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
    if (!files[0]) return 0;
    const long long step = last_logged_step(dir);
    char logged[64] = "";
    if (step >= 0) snprintf(logged, sizeof logged, "; metrics.jsonl logged up to step %lld", step);
    snprintf(what, size, "%s holds a run (%s%s)", gf_show_name(dir), files, logged);
    return 1;
}

/* -1 with the reason if dir holds a run and not overwrite. */
static int refuse_a_run(const char *dir, bool overwrite) {
    char what[GF_PATH_MAX + 400];
    if (overwrite || !gf_run_dir_holds_run(dir, what, sizeof what)) return 0;
    return gf_fail("%s; a new run there would replace them\nHINT: continue it with: grassflow train --resume %s; or "
                   "choose another --out; or pass --force to start again there, deleting that run", what, gf_show_name(dir));
}

int gf_run_dir_check_new(const char *dir, bool overwrite) {
    char path[GF_PATH_MAX];
    if (gf_path_join(path, sizeof path, dir, ".grassflow.lock")) return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW); /* looked at, not created */
    if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0) return busy(fd, dir);
    if (fd >= 0) close(fd);
    return refuse_a_run(dir, overwrite);
}

/* Whether name is that of a kept checkpoint (--save-every): step-DIGITS.safetensors. */
static bool is_step_file(const char *name) {
    if (strncmp(name, "step-", 5)) return false;
    const size_t n = strspn(name + 5, "0123456789");
    return n > 0 && !strcmp(name + 5 + n, ".safetensors");
}

static int remove_run_file(const char *dir, const char *name) {
    char path[GF_PATH_MAX];
    if (gf_path_join(path, sizeof path, dir, name) || (unlink(path) != 0 && errno != ENOENT))
        return gf_fail_write(errno, "cannot remove %s to start a new run there", gf_show_name(path));
    return 0;
}

/* A new run in dir, whose lock this run holds: refused if dir holds a run, unless overwrite, which removes
 * the old run's files (its kept step-N checkpoints too). */
static int claim_for_new_run(const char *dir, bool overwrite) {
    if (refuse_a_run(dir, overwrite)) return -1;
    for (size_t i = 0; i < sizeof run_files / sizeof *run_files; i++)
        if (remove_run_file(dir, run_files[i])) return -1;
    DIR *d = opendir(dir);
    int rc = 0;
    for (struct dirent *e; d && !rc && (e = readdir(d));)
        if (is_step_file(e->d_name)) rc = remove_run_file(dir, e->d_name);
    if (d) closedir(d);
    return rc;
}

int gf_run_dir_prepare(gf_run_dir *r, bool resume, bool overwrite) {
    /* a data-parallel job: every rank has looked at the folder (--out's checks, a rerun's status) before
     * rank 0, which alone writes the run, changes it */
    if (gf_comm_barrier()) return -1;
    if (gf_comm_rank() != 0) return 0;
    const char *dir = r->dir;
    size_t made[GF_MAX_MADE_DIRS];
    int n_made;
    if (gf_make_dirs(dir, made, &n_made)) return -1;
    if (probe_out_dir(dir)) {
        gf_unmake_dirs(dir, made, n_made); /* a rejected run leaves nothing behind */
        return -1;
    }
    if (lock_dir(r) || (!resume && claim_for_new_run(dir, overwrite))) return -1;
    remove_stale_tmp(dir);
    return 0;
}

/* What the run's metrics count and score: its task's unit and metric (the task named in o->made_from_json),
 * else by the model's head: tokens and perplexity for next-token prediction, examples and accuracy else. */
static void metrics_units(gf_run_dir *r, const gf_model *m, const gf_train_opts *o) {
    cJSON *made = o->made_from_json ? cJSON_Parse(o->made_from_json) : NULL;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(made, "task");
    const gf_task_ops *task = cJSON_IsString(name) ? gf_task_find(name->valuestring) : NULL;
    const bool lm = !strcmp(gf_model_config(m)->head_kind, "next_token");
    snprintf(r->counted, sizeof r->counted, "%s", task ? task->counted : lm ? "tokens" : "examples");
    r->metric = task ? gf_task_metric(task) : lm ? &gf_metric_ppl : &gf_metric_accuracy;
    cJSON_Delete(made);
}

int gf_run_dir_open(gf_run_dir *r, const gf_model *m, const gf_train_opts *o, const char *data_json) {
    *r = (gf_run_dir){.dir = o->out_dir, .tok_json = o->tokenizer_json, .data_json = data_json, .lock_fd = -1,
                      .accept_changed_data = o->accept_changed_data};
    metrics_units(r, m, o);
    r->cfg_json = gf_config_to_json(gf_model_config(m), false);
    if (!r->cfg_json) return gf_fail("out of memory starting training");
    return gf_run_dir_set_recipe(r, o);
}

int gf_run_dir_set_recipe(gf_run_dir *r, const gf_train_opts *o) {
    char *json = gf_train_opts_to_json(o);
    if (!json) return gf_fail("out of memory writing the recipe");
    free(r->recipe_json);
    r->recipe_json = json;
    const char *keys[] = {"config", "train", "data", "tokenizer"};
    const char *vals[] = {r->cfg_json, r->recipe_json, r->data_json, r->tok_json};
    return gf_st_metadata_fits(keys, vals, r->tok_json ? 4 : 3);
}

int gf_run_metrics_open(gf_run_dir *r, bool append) {
    if (gf_comm_rank() != 0) return 0; /* a data-parallel job: rank 0 alone writes the run */
    char path[GF_PATH_MAX];
    if (gf_path_join(path, sizeof path, r->dir, "metrics.jsonl")) return -1;
    /* a symbolic link, a FIFO or a device planted in the run folder is refused: a run writes only its own files */
    int fd = gf_open_write_regular(path, O_CREAT | (append ? O_APPEND : O_TRUNC));
    if (fd < 0) return -1;
    r->metrics = fdopen(fd, append ? "a" : "w");
    if (!r->metrics) {
        const int err = errno;
        close(fd);
        return gf_fail_write(err, "cannot write %s", gf_show_name(path));
    }
    return 0;
}

void gf_run_dir_close(gf_run_dir *r) {
    if (r->metrics) fclose(r->metrics);
    char lock[GF_PATH_MAX];
    if (r->lock_fd >= 0 && !gf_path_join(lock, sizeof lock, r->dir, ".grassflow.lock"))
        gf_unlock_file(lock, r->lock_fd); /* removes the file and releases the lock */
    else if (r->lock_fd >= 0)
        close(r->lock_fd);
    free(r->cfg_json);
    free(r->recipe_json);
    *r = (gf_run_dir){0};
}

int gf_run_save_model(const gf_run_dir *r, const gf_model *m, const char *name, int64_t step, double val_loss) {
    if (gf_comm_rank() != 0) return 0; /* a data-parallel job: rank 0 alone writes the run */
    char path[GF_PATH_MAX], st[32], vl[64];
    if (gf_path_join(path, sizeof path, r->dir, name)) return -1;
    snprintf(st, sizeof st, "%lld", (long long)step);
    snprintf(vl, sizeof vl, "%.9g", val_loss);
    const char *keys[] = {"tokenizer", "train", "step", "val_loss"};
    const char *vals[] = {r->tok_json, r->recipe_json, st, vl};
    const int skip = r->tok_json ? 0 : 1; /* no tokenizer: leave its key out */
    return gf_model_save_meta(m, path, keys + skip, vals + skip, 4 - skip);
}

/* The names of m's frozen tensors as a JSON list (malloc'd; "[]" when none). */
static char *frozen_list(const gf_model *m) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < gf_model_num_tensors(m); i++)
        if (!gf_model_tensor(m, i)->trainable) cJSON_AddItemToArray(a, cJSON_CreateString(gf_model_tensor(m, i)->name));
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

int gf_run_save_state(const gf_run_dir *r, gf_model *m, gf_adamw *opt, const gf_run_progress *p) {
    if (gf_comm_rank() != 0) return 0; /* a data-parallel job: rank 0 alone writes the run */
    char path[GF_PATH_MAX], st[32], bv[64], ba[64], el[64], sn[64], be[32], lv[64];
    if (gf_path_join(path, sizeof path, r->dir, "state.safetensors")) return -1;
    snprintf(st, sizeof st, "%lld", (long long)p->step);
    snprintf(bv, sizeof bv, "%.17g", p->best);
    snprintf(ba, sizeof ba, "%.17g", p->best_score);
    snprintf(lv, sizeof lv, "%.17g", p->last_val);
    snprintf(el, sizeof el, "%.3f", p->elapsed_s);
    snprintf(sn, sizeof sn, "%.0f", p->seen);
    snprintf(be, sizeof be, "%lld", (long long)p->bad_evals);
    int64_t n = gf_model_num_params(m), nt = gf_model_num_trainable(m); /* moments: trainable tensors only */
    gf_st_out ts[3] = {
        {.name = "params", .dtype = GF_DT_F32, .ndim = 1, .shape = {n}, .data = gf_model_params(m)},
        {.name = "adam_m", .dtype = GF_DT_F32, .ndim = 1, .shape = {nt}, .data = gf_adamw_m(opt)},
        {.name = "adam_v", .dtype = GF_DT_F32, .ndim = 1, .shape = {nt}, .data = gf_adamw_v(opt)},
    };
    char *frozen = frozen_list(m);
    if (!frozen) return gf_fail("out of memory saving %s", path);
    const char *keys[14] = {"config"}, *vals[14] = {r->cfg_json};
    int k = 1;
    if (nt != n) keys[k] = "frozen", vals[k++] = frozen; /* which tensors have no moments; absent: none */
    if (r->tok_json) keys[k] = "tokenizer", vals[k++] = r->tok_json;
    keys[k] = "train", vals[k++] = r->recipe_json;
    keys[k] = "data", vals[k++] = r->data_json;
    keys[k] = "step", vals[k++] = st;
    keys[k] = "best_val_loss", vals[k++] = bv;
    char bk[48]; /* a best chosen by a metric not of the loss: best_val_acc, best_val_KEY */
    snprintf(bk, sizeof bk, "best_val_%s", r->metric->key ? r->metric->key : r->metric->name);
    if (!isnan(p->best_score)) keys[k] = bk, vals[k++] = ba;
    if (isfinite(p->last_val)) keys[k] = "last_val_loss", vals[k++] = lv; /* what step checkpoints record */
    keys[k] = "elapsed_s", vals[k++] = el; /* the run's wall-clock time and counted targets up to step */
    if (!isnan(p->seen)) keys[k] = "seen", vals[k++] = sn; /* absent: not known (resumed from an older state) */
    if (p->bad_evals) keys[k] = "bad_evals", vals[k++] = be;           /* early stopping's count */
    if (p->stopped_early[0]) keys[k] = "stopped_early", vals[k++] = p->stopped_early;
    keys[k] = "producer", vals[k++] = "grassflow " GF_VERSION;
    int rc = gf_st_write(path, ts, 3, keys, vals, k);
    free(frozen);
    return rc;
}

/* Whether the config JSON of a saved state (any format this version reads) describes the model whose
 * config, in this version's form, is cur_json; if not, the keys that differ into diff (n bytes). */
static bool same_config(const char *saved_json, const char *cur_json, const char *path, char *diff, size_t n) {
    gf_config *saved = malloc(2 * sizeof *saved);
    snprintf(diff, n, "a config this version cannot read");
    bool same = false;
    if (saved && !gf_config_from_json(saved_json, path, &saved[0]) && !gf_config_from_json(cur_json, "", &saved[1]))
        same = gf_config_diff(&saved[0], &saved[1], diff, n) == 0;
    free(saved);
    return same;
}

/* The saved run must be this one: same config, same tokenizer (or none in both). */
static int same_run(const gf_run_dir *r, const char *path, const char *cfg, const char *tok) {
    char diff[1024];
    if (!same_config(cfg, r->cfg_json, path, diff, sizeof diff))
        return gf_fail("%s: the saved run has another model config than the one given: %s (the saved run's vs the one "
                       "given)\nHINT: resume with the same --model/--config and --set options, or omit them", path, diff);
    if (!tok != !r->tok_json || (tok && strcmp(tok, r->tok_json) != 0))
        return gf_fail("%s: the saved run used another tokenizer/vocabulary than this corpus gives", path);
    return 0;
}

/* One split's entry of a "data" record: "N examples" (or "?" if absent). */
static void split_examples(const cJSON *d, const char *split, char *buf, size_t n) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, split), "examples");
    if (cJSON_IsNumber(e)) snprintf(buf, n, "%.0f examples", e->valuedouble);
    else snprintf(buf, n, "?");
}

int gf_run_check_data(const gf_run_dir *r, const char *saved) {
    char path[GF_PATH_MAX];
    if (!saved || !r->data_json || !strcmp(saved, r->data_json)) return 0;
    if (gf_path_join(path, sizeof path, r->dir, "state.safetensors")) return -1;
    cJSON *a = cJSON_Parse(saved), *b = cJSON_Parse(r->data_json);
    char msg[512] = "", was[64], now[64];
    const char *splits[] = {"train", "valid"}, *names[] = {"training", "validation"};
    for (int i = 0; i < 2; i++) {
        const cJSON *sa = cJSON_GetObjectItemCaseSensitive(a, splits[i]), *sb = cJSON_GetObjectItemCaseSensitive(b, splits[i]);
        char *ja = sa ? cJSON_PrintUnformatted(sa) : NULL, *jb = sb ? cJSON_PrintUnformatted(sb) : NULL;
        if (!ja || !jb || strcmp(ja, jb)) {
            split_examples(a, splits[i], was, sizeof was);
            split_examples(b, splits[i], now, sizeof now);
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg), "%sthe %s split had %s, now %s%s", msg[0] ? "; " : "",
                     names[i], was, now, strcmp(was, now) ? "" : " of other content");
        }
        free(ja);
        free(jb);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    if (r->accept_changed_data) {
        if (gf_comm_rank() == 0) /* a data-parallel job says it once */
            fprintf(stderr, "grassflow: note: %s: the data changed since the state was saved (%s); going on as asked: "
                    "the run no longer continues bit for bit\n", gf_show_name(path), msg);
        return 0;
    }
    return gf_fail("%s: the data changed since this run was saved: %s; resuming would not continue the run it "
                   "saved\nHINT: resume with the data it was trained on (its --corpus is in the state); or pass "
                   "--accept-changed-data to go on anyway; or start a new run", path, msg);
}

/* The step and best validation loss of a state's metadata. */
static int parse_progress(const char *path, const char *st, const char *bv, int64_t *step, double *best) {
    char *end1, *end2;
    errno = 0;
    long long stv = strtoll(st, &end1, 10);
    double bvv = strtod(bv, &end2);
    if (end1 == st || *end1 || errno || stv < 0 || stv > (1LL << 62))
        return gf_fail("%s: step \"%.40s\" is not a step count (expected an integer >= 0)", path, st);
    if (end2 == bv || *end2 || isnan(bvv))
        return gf_fail("%s: best_val_loss \"%.40s\" is not a number (expected a loss, or inf before any evaluation)",
                       path, bv);
    *step = stv;
    *best = bvv;
    return 0;
}

/* Copy the state's params (n floats), adam_m and adam_v (nt each: the trainable tensors') into dst, all
 * finite. */
static int load_arenas(const char *path, const gf_st_tensor *const ts[3], float *const dst[3], int64_t n,
                       int64_t nt) {
    const int64_t want[3] = {n, nt, nt};
    for (int i = 0; i < 3; i++) {
        if (ts[i]->dtype != GF_DT_F32 || ts[i]->numel != want[i])
            return gf_fail("%s: tensor %s should hold %lld F32 values", path, ts[i]->name, (long long)want[i]);
        memcpy(dst[i], ts[i]->data, (size_t)want[i] * sizeof(float));
    }
    for (int i = 0; i < 3; i++) /* the checkpoint loader's check */
        if (gf_st_check_finite(path, ts[i]->name, dst[i], want[i],
                               "the state is corrupt\nHINT: start again, or from last.safetensors"))
            return -1;
    return 0;
}

/* A number of a state's metadata (key absent: NAN); -1 if it is there and not a number >= 0. */
static int clock_value(const char *path, gf_st_file *f, const char *key, double *v) {
    char *s = gf_st_metadata(f, key), *end = NULL;
    *v = s ? strtod(s, &end) : NAN;
    const bool bad = s && (end == s || *end || !(*v >= 0) || isinf(*v));
    free(s);
    return bad ? gf_fail("%s: %s is not a number >= 0", path, key) : 0;
}

/* The wall-clock time of a run up to step from a state saved before it was stored there: the last time
 * metrics.jsonl logged at or before step (in the oldest files, the time of the session that logged it);
 * 0 with a note when it says none. */
static double logged_elapsed(const char *dir, int64_t step) {
    gf_metrics mt;
    double t = NAN;
    if (gf_metrics_read(dir, &mt) == 0)
        for (int64_t i = 0; i < mt.n; i++)
            if (mt.rows[i].step <= step && !isnan(mt.rows[i].elapsed_s)) t = mt.rows[i].elapsed_s;
    gf_metrics_free(&mt);
    if (isnan(t)) gf_note("%s: the earlier sessions' time is not known (an older state, no time in metrics.jsonl); "
                          "metrics.jsonl counts elapsed_s from this session", dir);
    return isnan(t) ? 0.0 : t;
}

/* The run's time and counted targets up to the state's step (older states: the time from metrics.jsonl,
 * the count unknown). */
static int load_clock(const gf_run_dir *r, const char *path, gf_st_file *f, int64_t step, double *elapsed_s,
                      double *seen) {
    if (clock_value(path, f, "elapsed_s", elapsed_s) || clock_value(path, f, "seen", seen)) return -1;
    if (isnan(*elapsed_s)) *elapsed_s = logged_elapsed(r->dir, step);
    return 0;
}

/* What early stopping left in a state's metadata (absent: a count of 0, and no early stop). */
static int early_stop_meta(const gf_st_file *f, const char *path, gf_run_progress *p) {
    char *be = gf_st_metadata(f, "bad_evals"), *se = gf_st_metadata(f, "stopped_early"), *end = NULL;
    int rc = 0;
    p->bad_evals = be ? strtoll(be, &end, 10) : 0;
    if (be && (end == be || *end || p->bad_evals < 0))
        rc = gf_fail("%s: bad_evals \"%.40s\" is not a count (expected an integer >= 0)", path, be);
    snprintf(p->stopped_early, sizeof p->stopped_early, "%s", se ? se : "");
    free(be);
    free(se);
    return rc;
}

int gf_run_load_state(const gf_run_dir *r, gf_model *m, gf_adamw *opt, gf_run_progress *p, char **data,
                      char **recipe) {
    char path[GF_PATH_MAX];
    if (gf_path_join(path, sizeof path, r->dir, "state.safetensors")) return -1;
    gf_st_file *f = gf_st_read(path);
    if (!f) return -1;
    int rc = -1;
    char *cfg = gf_st_metadata(f, "config"), *tok = gf_st_metadata(f, "tokenizer");
    char *st = gf_st_metadata(f, "step"), *bv = gf_st_metadata(f, "best_val_loss");
    *data = gf_st_metadata(f, "data"); /* the caller's; NULL for a run from before it was recorded */
    *recipe = gf_st_metadata(f, "train");
    const gf_st_tensor *ts[3] = {gf_st_find(f, "params"), gf_st_find(f, "adam_m"), gf_st_find(f, "adam_v")};
    float *dst[3] = {gf_model_params(m), gf_adamw_m(opt), gf_adamw_v(opt)};
    char *frozen = gf_st_metadata(f, "frozen"), *now = frozen_list(m);
    if (!cfg || (!tok && r->tok_json) || !st || !bv || !*recipe || !ts[0] || !ts[1] || !ts[2] || !now)
        gf_fail("%s: not a grassflow training state (missing params, moments or metadata)", path);
    else if (strcmp(frozen ? frozen : "[]", now) != 0)
        gf_fail("%s: the saved run froze %s, this one freezes %s; the optimizer state belongs to the saved set\n"
                "HINT: resume with the same frozen tensors", path, frozen ? frozen : "nothing", now);
    else if (!same_run(r, path, cfg, tok) && !load_arenas(path, ts, dst, gf_model_num_params(m), gf_model_num_trainable(m)) &&
             !parse_progress(path, st, bv, &p->step, &p->best) && !early_stop_meta(f, path, p))
        rc = 0;
    char bk[48], *end = NULL;
    const gf_metric *mt = r->metric;
    snprintf(bk, sizeof bk, "best_val_%s", mt->key ? mt->key : mt->name);
    char *ba = mt->by_loss ? NULL : gf_st_metadata(f, bk);
    p->best_score = ba ? strtod(ba, &end) : NAN;
    if (!rc && ba && (end == ba || *end || !(p->best_score >= mt->lo && p->best_score <= mt->hi)))
        rc = gf_fail("%s: %s \"%.40s\" is not %s %s in [%g, %g]", path, bk, ba,
                     strchr("aeiou", mt->title[0]) ? "an" : "a", mt->title, mt->lo, mt->hi);
    free(ba);
    char *lv = gf_st_metadata(f, "last_val_loss");
    p->last_val = lv ? strtod(lv, &end) : NAN; /* absent: a state from before it was kept */
    if (!rc && lv && (end == lv || *end || !isfinite(p->last_val)))
        rc = gf_fail("%s: last_val_loss \"%.40s\" is not a finite loss", path, lv);
    free(lv);
    if (!rc && load_clock(r, path, f, p->step, &p->elapsed_s, &p->seen)) rc = -1;
    if (!rc) gf_adamw_set_steps(opt, p->step);
    free(frozen);
    free(now);
    free(cfg);
    free(tok);
    free(st);
    free(bv);
    gf_st_free(f);
    return rc;
}

/* The keys every row begins with: its type, where the run is (step, epoch, counted targets seen under the
 * task's name for them, seconds since the run began). */
static void row_head(FILE *f, const gf_run_dir *r, const char *type, const gf_train_event *e) {
    fprintf(f, "{\"type\": \"%s\", \"step\": %lld, \"epoch\": %s, ", type, (long long)e->step,
            gf_json_num(e->epochs, 'f', 6).s);
    gf_json_put_str(f, r->counted);
    fprintf(f, ": %s, \"elapsed_s\": %s", gf_json_num(e->seen, 'f', 0).s, gf_json_num(e->run_elapsed_s, 'f', 3).s);
}

/* The JSON line of a step, evaluation or skipped-step event into f (others: nothing). Numbers that are not
 * finite (a diverged run's loss) are null. */
static void metrics_json(FILE *f, const gf_run_dir *r, const gf_train_event *e) {
    if (e->kind == GF_EV_STEP) {
        row_head(f, r, "train", e);
        fprintf(f, ", \"loss\": %s, \"lr\": %s, \"grad_norm\": %s, \"tokens_per_s\": %s}\n",
                gf_json_num(e->loss, 'f', 6).s, gf_json_num(e->lr, 'g', 6).s, gf_json_num(e->grad_norm, 'g', 6).s,
                gf_json_num(e->tokens_per_s, 'f', 1).s);
    } else if (e->kind == GF_EV_EVAL) { /* the task's metric: "val_ppl", "val_acc", "val_KEY" */
        const gf_metric *mt = r->metric;
        row_head(f, r, "eval", e);
        fprintf(f, ", \"val_loss\": %s, \"val_%s\": %s, \"best_val_loss\": %s, \"is_best\": %s}\n",
                gf_json_num(e->val_loss, 'f', 6).s, mt->key ? mt->key : mt->name,
                gf_json_num(e->val_score, 'f', mt->decimals + 2).s, gf_json_num(e->best_val_loss, 'f', 6).s,
                e->is_best ? "true" : "false");
    } else if (e->kind == GF_EV_SKIPPED) {
        row_head(f, r, "skipped", e);
        fprintf(f, ", \"skipped\": \"%s is not finite\"}\n", e->what);
    }
}

/* Flush a written line; an error that stops the run if it did not reach the file. */
static int metrics_flush(const gf_run_dir *r) {
    errno = 0;
    if (fflush(r->metrics) == 0 && !ferror(r->metrics)) return 0;
    const int err = errno ? errno : EIO;
    return gf_fail("cannot write %s/metrics.jsonl: %s; training stopped (the checkpoints written so far are intact)"
                   "\nHINT: %s; then continue with grassflow train --resume %s", gf_show_name(r->dir), strerror(err),
                   gf_write_hint(err), gf_show_name(r->dir));
}

int gf_run_metrics_start(const gf_run_dir *r, const gf_train_event *e, bool resumed) {
    if (gf_comm_rank() != 0) return 0; /* a data-parallel job: rank 0 alone writes the run */
    if (!r->metrics) return 0;
    row_head(r->metrics, r, "start", e);
    fputs(", \"counted\": ", r->metrics);
    gf_json_put_str(r->metrics, r->counted);
    fprintf(r->metrics, ", \"metric\": \"%s\", \"resumed\": %s, \"producer\": \"grassflow %s\"}\n", r->metric->name,
            resumed ? "true" : "false", GF_VERSION);
    return metrics_flush(r);
}

int gf_run_metrics_line(const gf_run_dir *r, const gf_train_event *e) {
    if (gf_comm_rank() != 0) return 0; /* a data-parallel job: rank 0 alone writes the run */
    if (!r->metrics) return 0;
    metrics_json(r->metrics, r, e);
    return metrics_flush(r);
}
