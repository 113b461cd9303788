/* grassflow search: compare grown into grids and lists (issue 55). A spec (JSON: docs/search.md) names the data,
 * one recipe, a budget (training tokens, steps or epochs), seeds, and searches: each a model with a grid over
 * compare's options and config keys, or a list of points, or both (each listed point under every grid point).
 * Every point is one `grassflow compare` of its model with its seeds, in its own folder under --out, run as a
 * child process: a rerun reads back what finished and continues what stopped, as compare does. With
 * "halving", every point first runs a share of the budget; the best 1/eta of each search (by mean validation
 * score) then go on to the whole budget. search_report.c writes the results, the tables and the plots. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "search.h"

extern char **environ;

static void help(void) {
    printf("usage: grassflow search SPEC.json [--out DIR] [--jobs N] [--plan] [--json]\n\n"
           "Train every point of the searches a spec describes, each a `grassflow compare` of its model with the\n"
           "spec's seeds and recipe, the point's options on top, in DIR/NN-MODEL/POINT; then tabulate them: one row per\n"
           "point (mean and spread over the seeds), best first, in DIR/summary.md and summary.tsv, one row per run in\n"
           "DIR/results.jsonl, the validation score against each searched number in DIR/by-KEY.svg, each run's score\n"
           "as a bar in DIR/points.svg and the curves of each search's best point in DIR/best-curves.svg. Run the same command again to continue: finished points\n"
           "are read back, a stopped one continues bit for bit, new points start. Ctrl-C stops the running point\n"
           "(its state saved) and the search.\n\n"
           "The spec (docs/search.md):\n"
           "  {\"corpus\": \"wikitext-2\", \"task\": \"lm\", \"recipe\": {\"batch\": 16, \"seq-len\": 128, \"eval-every\": 200},\n"
           "   \"tokens\": 2000000, \"seeds\": [1234, 2],\n"
           "   \"searches\": [{\"model\": \"transformer-small\", \"grid\": {\"lr\": [3e-4, 1e-3], \"warmup\": [50, 200]}},\n"
           "                {\"model\": \"grassmann-small\", \"grid\": {\"lr\": [1e-3]}, \"list\": [{\"set rank\": 16}, {}]}],\n"
           "   \"halving\": {\"eta\": 3, \"first\": 0.25}}\n"
           "  recipe and points: compare's options by their flag's name (\"lr\": 1e-3 is --lr 0.001; true is a flag\n"
           "  alone), and config keys as \"set KEY\" (\"set rank\": 16 is --set rank=16); the budget: one of tokens\n"
           "  (optimizer steps = tokens / (batch x seq-len x accum), rounded up), steps, epochs.\n\n"
           "  --out DIR   where the points and the tables go (default runs/search)\n"
           "  --jobs N    run N points at once (default 1), each with 1/N of the threads (--threads, else\n"
           "              OMP_NUM_THREADS, else all cores) and its output in DIR/NN-MODEL/POINT.log; the\n"
           "              numbers are those of one at a time on as many threads a point\n"
           "  --plan      print the points and the command each runs, and stop\n"
           "  --json      print DIR/results.jsonl at the end instead of the table\n");
}

/* ---- the spec ------------------------------------------------------------------------------------------ */

static int spec_error(const sr_job *j, const char *what) {
    return cli_error("%s: %s\nHINT: grassflow search --help shows the spec's form (docs/search.md)",
                     gf_show_name(j->spec_path), what);
}

/* compare's options that a search sets itself */
static bool reserved(const char *k) {
    static const char *const R[] = {"models", "seeds", "seed", "out", "steps", "epochs", "json", "force", "resume",
                                    "set", "reference", "corpus", "task", "help", NULL};
    for (int i = 0; R[i]; i++)
        if (!strcmp(k, R[i])) return true;
    return false;
}

/* One option from a spec's "KEY": value (a flag's name, or "set KEY"); 0, or -1 after the message. */
static int take_opt(const sr_job *j, const char *key, const cJSON *v, sr_opt *o) {
    char msg[512];
    memset(o, 0, sizeof *o);
    o->set = !strncmp(key, "set ", 4);
    const char *k = o->set ? key + 4 : key;
    bool ok = *k && strlen(k) < sizeof o->key && (o->set || !reserved(k));
    for (const char *c = k; ok && *c; c++) ok = strchr("abcdefghijklmnopqrstuvwxyz0123456789-_.[]", *c) != NULL;
    if (!ok) {
        snprintf(msg, sizeof msg, "\"%s\" is not an option a point may set: a compare flag's name in lower case (lr, "
                 "warmup, seq-len, ...; not one the search sets: models, seeds, out, steps, epochs, corpus, task), or "
                 "\"set KEY\" for a config key", key);
        return spec_error(j, msg), -1;
    }
    snprintf(o->key, sizeof o->key, "%s", k);
    char *text = cJSON_IsString(v) ? NULL : cJSON_PrintUnformatted(v);
    const char *val = cJSON_IsString(v) ? v->valuestring : text;
    ok = val && strlen(val) < sizeof o->val && !cJSON_IsNull(v) && (o->set || !cJSON_IsObject(v));
    if (ok) snprintf(o->val, sizeof o->val, "%s", val);
    o->numeric = cJSON_IsNumber(v);
    free(text);
    if (!ok) {
        snprintf(msg, sizeof msg, "\"%s\" has a value that is not a number, a string or true/false (or is over %zu bytes)",
                 key, sizeof o->val - 1);
        return spec_error(j, msg), -1;
    }
    return 0;
}

/* A positive integer member (0 when absent); -1 after the message when it is not one. */
static int64_t pos_int(const sr_job *j, const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e15 || v->valuedouble != floor(v->valuedouble)) {
        char msg[160];
        snprintf(msg, sizeof msg, "\"%s\" must be a whole number from 1 to 10^15", name);
        return spec_error(j, msg), -1;
    }
    return (int64_t)v->valuedouble;
}

static int read_seeds(sr_job *j) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j->spec, "seeds"), *v;
    if (!s) return snprintf(j->seeds, sizeof j->seeds, "1234"), 0;
    size_t len = 0;
    int n = 0;
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) < 1 || cJSON_GetArraySize(s) > 16)
        return spec_error(j, "\"seeds\" must be a list of 1 to 16 whole numbers");
    cJSON_ArrayForEach(v, s) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15 || v->valuedouble != floor(v->valuedouble))
            return spec_error(j, "\"seeds\" must be a list of 1 to 16 whole numbers");
        len += (size_t)snprintf(j->seeds + len, sizeof j->seeds - len, "%s%.0f", n++ ? "," : "", v->valuedouble);
    }
    return 0;
}

static int read_budget(sr_job *j) {
    if ((j->tokens = pos_int(j, j->spec, "tokens")) < 0 || (j->steps = pos_int(j, j->spec, "steps")) < 0 ||
        (j->epochs = pos_int(j, j->spec, "epochs")) < 0)
        return EXIT_RUNTIME;
    if ((j->tokens > 0) + (j->steps > 0) + (j->epochs > 0) != 1)
        return spec_error(j, "the budget is one of \"tokens\", \"steps\" or \"epochs\" (a run's length, the same for "
                          "every point)");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j->spec, "halving");
    if (!h) return EXIT_OK;
    const cJSON *eta = cJSON_GetObjectItemCaseSensitive(h, "eta"), *first = cJSON_GetObjectItemCaseSensitive(h, "first");
    if (!cJSON_IsNumber(eta) || eta->valuedouble < 2 || eta->valuedouble > 64 || eta->valuedouble != floor(eta->valuedouble) ||
        !cJSON_IsNumber(first) || !(first->valuedouble > 0 && first->valuedouble < 1))
        return spec_error(j, "\"halving\" is {\"eta\": E, \"first\": F}: keep the best 1/E of each search (E a whole "
                          "number from 2 to 64) after every point ran the share F of the budget (0 < F < 1)");
    if (j->epochs) return spec_error(j, "\"halving\" needs a budget in tokens or steps (a rung is a share of it)");
    j->eta = (int)eta->valuedouble, j->first = first->valuedouble;
    return EXIT_OK;
}

/* The spec's top level: data, recipe, budget, seeds. */
static int read_head(sr_job *j) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j->spec, "corpus"), *t = cJSON_GetObjectItemCaseSensitive(j->spec, "task");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j->spec, "recipe"), *v;
    if (!cJSON_IsString(c)) return spec_error(j, "\"corpus\" (the data every point trains on, as compare's --corpus) is missing");
    if (t && !cJSON_IsString(t)) return spec_error(j, "\"task\" must be a string (compare's --task)");
    j->corpus = c->valuestring, j->task = t ? t->valuestring : NULL;
    if (r && !cJSON_IsObject(r)) return spec_error(j, "\"recipe\" must be an object of compare's options");
    cJSON_ArrayForEach(v, r) {
        if (j->n_recipe == SR_MAX_RECIPE) return spec_error(j, "\"recipe\" has more than 32 options");
        if (take_opt(j, v->string, v, &j->recipe[j->n_recipe++])) return EXIT_RUNTIME;
    }
    int rc = read_seeds(j);
    return rc ? rc : read_budget(j);
}

/* ---- the points ---------------------------------------------------------------------------------------- */

/* The option of p or else of the recipe called key (a flag); NULL if neither sets it. */
static const char *opt_value(const sr_job *j, const sr_point *p, const char *key) {
    for (int i = 0; i < p->n_o; i++)
        if (!p->o[i].set && !strcmp(p->o[i].key, key)) return p->o[i].val;
    for (int i = 0; i < j->n_recipe; i++)
        if (!j->recipe[i].set && !strcmp(j->recipe[i].key, key)) return j->recipe[i].val;
    return NULL;
}

/* p's folder (OUT/NN-MODEL/KEY=VALUE,...: unsafe bytes as _, a long name cut and made unique by a hash) and
 * its budget in steps. */
static int finish_point(sr_job *j, sr_point *p) {
    char name[160] = "", model[300];
    size_t len = 0;
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < p->n_o; i++) {
        char kv[400];
        snprintf(kv, sizeof kv, "%s%s=%s", i ? "," : "", p->o[i].key, p->o[i].val);
        for (const char *c = kv; *c; c++) {
            h = (h ^ (unsigned char)*c) * 1099511628211ULL;
            if (len + 1 < sizeof name) name[len++] = strchr("/\\ \t\n\"'*?:", *c) || (unsigned char)*c < 32 ? '_' : *c;
        }
    }
    name[len] = 0;
    if (len >= 120) snprintf(name + 110, sizeof name - 110, "-%016llx", (unsigned long long)h);
    snprintf(model, sizeof model, "%02d-%s", p->entry + 1, p->model);
    for (char *c = model; *c; c++) *c = *c == '/' ? '_' : *c;
    char sub[GF_PATH_MAX];
    if (gf_path_join(sub, sizeof sub, j->out, model) || gf_path_join(p->dir, sizeof p->dir, sub, len ? name : "default"))
        return cli_error("%s", gf_last_error());
    if (!j->tokens) return p->steps = j->steps, EXIT_OK;
    const char *b = opt_value(j, p, "batch"), *s = opt_value(j, p, "seq-len"), *a = opt_value(j, p, "accum");
    double B = b ? atof(b) : 0, S = s ? atof(s) : 0, A = a ? atof(a) : 1;
    if (!(B >= 1 && S >= 1 && A >= 1))
        return spec_error(j, "a budget in \"tokens\" needs \"batch\" and \"seq-len\" (in the recipe or every point): a "
                          "step trains batch x seq-len x accum tokens");
    p->steps = (int64_t)ceil((double)j->tokens / (B * S * A));
    return EXIT_OK;
}

/* The points of search e: each of its list's points (one empty point without a list) under each point of its
 * grid (the product of its keys' values, the first key slowest). */
static int expand(sr_job *j, int e, const cJSON *s) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "model"), *g = cJSON_GetObjectItemCaseSensitive(s, "grid");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(s, "list"), *keys[SR_MAX_KEYS];
    if (!cJSON_IsString(m)) return spec_error(j, "a search without \"model\" (a preset or a config file, as --models)");
    if ((g && !cJSON_IsObject(g)) || (l && (!cJSON_IsArray(l) || !cJSON_GetArraySize(l))))
        return spec_error(j, "a search's \"grid\" is an object of lists, its \"list\" a list of objects");
    int nk = 0, total = 1, nl = l ? cJSON_GetArraySize(l) : 1;
    for (const cJSON *k = g ? g->child : NULL; k; k = k->next) {
        if (nk == SR_MAX_KEYS || !cJSON_IsArray(k) || !cJSON_GetArraySize(k))
            return spec_error(j, "a grid has at most 12 keys, each with a list of one or more values");
        keys[nk++] = k;
        total *= cJSON_GetArraySize(k);
        if (total > SR_MAX_POINTS) break;
    }
    if ((int64_t)total * nl + j->n > SR_MAX_POINTS) return spec_error(j, "more than 4096 points in all");
    for (int gi = 0; gi < total; gi++)
        for (int li = 0; li < nl; li++) {
            sr_point *p = &j->p[j->n++];
            memset(p, 0, sizeof *p);
            p->entry = e;
            snprintf(p->model, sizeof p->model, "%s", m->valuestring);
            for (int k = 0, r = gi; k < nk; k++) { /* the first key slowest */
                int inner = 1;
                for (int q = k + 1; q < nk; q++) inner *= cJSON_GetArraySize(keys[q]);
                if (take_opt(j, keys[k]->string, cJSON_GetArrayItem(keys[k], r / inner), &p->o[p->n_o++])) return EXIT_RUNTIME;
                r %= inner;
            }
            const cJSON *pt = l ? cJSON_GetArrayItem(l, li) : NULL, *v;
            if (pt && !cJSON_IsObject(pt)) return spec_error(j, "a search's \"list\" holds objects (a point's options)");
            cJSON_ArrayForEach(v, pt) {
                if (p->n_o == SR_MAX_KEYS) return spec_error(j, "a point sets at most 12 options");
                if (take_opt(j, v->string, v, &p->o[p->n_o++])) return EXIT_RUNTIME;
            }
            if (finish_point(j, p)) return EXIT_RUNTIME;
        }
    return EXIT_OK;
}

static int read_spec(sr_job *j) {
    size_t n;
    char *text = (char *)gf_read_file(j->spec_path, (size_t)1 << 20, &n);
    if (!text) return cli_error("%s\nHINT: the spec is a JSON file (grassflow search --help)", gf_last_error());
    j->spec = cJSON_ParseWithLength(text, n);
    free(text);
    if (!cJSON_IsObject(j->spec)) return spec_error(j, "not a JSON object");
    int rc = read_head(j);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j->spec, "searches"), *e;
    if (!rc && (!cJSON_IsArray(s) || !cJSON_GetArraySize(s) || cJSON_GetArraySize(s) > SR_MAX_ENTRIES))
        rc = spec_error(j, "\"searches\" must be a list of 1 to 64 searches ({\"model\": ..., \"grid\": ..., \"list\": ...})");
    if (!rc && !(j->p = calloc(SR_MAX_POINTS, sizeof *j->p))) rc = cli_error("out of memory");
    for (e = rc ? NULL : s->child; e; e = e->next) {
        if (!cJSON_IsObject(e)) return spec_error(j, "\"searches\" holds objects");
        if ((rc = expand(j, j->n_entries++, e))) break;
    }
    for (int a = 0; !rc && a < j->n; a++) /* two points in one folder would share their runs */
        for (int b = a + 1; b < j->n; b++)
            if (!strcmp(j->p[a].dir, j->p[b].dir))
                return cli_error("%s: two points of search %d set the same options (%s): each point once",
                                 gf_show_name(j->spec_path), j->p[a].entry + 1, gf_show_name(j->p[a].dir));
    return rc;
}

/* ---- running a point ------------------------------------------------------------------------------------- */

typedef struct {
    char **av, *buf;
    int n;
    size_t cap, len;
} argv_buf;

static void add(argv_buf *a, const char *fmt, const char *s) {
    a->av[a->n++] = a->buf + (a->len < a->cap ? a->len : a->cap - 1);
    a->len += (size_t)snprintf(a->buf + (a->len < a->cap ? a->len : a->cap - 1), a->len < a->cap ? a->cap - a->len : 1,
                               fmt, s) + 1;
}

/* The argument vector of p's compare at `steps` (0: the epoch budget), into av (the strings in buf): its
 * length, or -1 when buf is too small. */
static int point_argv(const sr_job *j, const sr_point *p, int64_t steps, char **av, char *buf, size_t cap) {
    argv_buf a = {av, buf, 0, cap, 0};
    char kv[600], num[32];
    const char *fixed[] = {"grassflow", "compare", "--models", p->model, "--seeds", j->seeds, "--out", p->dir,
                           "--json", "--corpus", j->corpus};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) add(&a, "%s", fixed[i]);
    if (j->task) add(&a, "%s", "--task"), add(&a, "%s", j->task);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < (pass ? p->n_o : j->n_recipe); i++) {
            const sr_opt *o = pass ? &p->o[i] : &j->recipe[i];
            if (!pass && !o->set && opt_value(j, p, o->key) != o->val) continue; /* the point's own wins */
            if (o->set) {
                snprintf(kv, sizeof kv, "%s=%s", o->key, o->val);
                add(&a, "%s", "--set"), add(&a, "%s", kv);
            } else if (strcmp(o->val, "false")) { /* false: the flag left out; true: the flag alone */
                add(&a, "--%s", o->key);
                if (strcmp(o->val, "true")) add(&a, "%s", o->val);
            }
        }
    snprintf(num, sizeof num, "%lld", (long long)(steps ? steps : j->epochs));
    add(&a, "%s", steps ? "--steps" : "--epochs"), add(&a, "%s", num);
    av[a.n] = NULL;
    return a.len <= cap ? a.n : -1;
}

/* The command line of av, shell-quoted where it needs it, to f */
static void print_argv(FILE *f, char *const *av) {
    char line[20000];
    size_t len = 0;
    for (int i = 0; av[i]; i++) cli_shell_word(line, sizeof line, &len, av[i]);
    fprintf(f, "%s\n", line);
}

/* ---- running the points: one at a time, or --jobs at once ---------------------------------------------------- */

/* While points run, SIGINT and SIGTERM sent to the search alone (`kill PID`, a job manager) are passed on to
 * every running point, once: each saves its state and exits with 128 + the signal, and the search stops after
 * them. A signal the terminal sent (Ctrl-C: si_code SI_KERNEL) reached the points' process group itself, and
 * is not passed on, nor is a second one: two more would make a point abort without saving (a signal sent to
 * the whole group reaches a point twice, directly and passed on: a point does not count the search's copy,
 * src/cli/run.c). A point is started with both signals blocked and its pid recorded before they are let
 * through, so one that came while it started (g_spawning) is passed on to it, whoever sent it; and any stop
 * ends the search after the points running, even if they had finished (g_stop). */
static volatile sig_atomic_t g_child[SR_MAX_JOBS], g_passed, g_stop, g_spawning;

/* sig to every running point, once a search (async-signal-safe) */
static void signal_points(int sig) {
    if (g_passed) return;
    g_passed = 1;
    for (int k = 0; k < SR_MAX_JOBS; k++)
        if (g_child[k] > 0) kill((pid_t)g_child[k], sig);
}

static void pass_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    const int saved = errno; /* kill() must not change the EINTR the wait loop reads */
    g_stop = sig;
    if (si->si_code != SI_KERNEL || g_spawning) signal_points(sig);
    errno = saved;
}

/* Stop every running point (a point failed or stopped beside them): each saves its state. */
static void stop_others(void) { signal_points(SIGTERM); }

/* p's log with --jobs above 1 (its compare's stderr): OUT/NN-MODEL/POINT.log, beside its folder; make its
 * folder too (make) */
static int log_path(const sr_point *p, char *path, size_t n, bool make) {
    if ((size_t)snprintf(path, n, "%s.log", p->dir) >= n) return cli_error("a point's log path is too long");
    if (!make) return EXIT_OK;
    char parent[GF_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", p->dir);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = 0;
    return slash && gf_mkdir_p(parent) ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

/* Start p's compare at `steps` as a child (this executable) in slot k, its table (stdout) dropped, its progress
 * shown (--jobs 1) or written to its log: its pid, or -1 after the message. Called with SIGINT and SIGTERM
 * blocked; the child starts with them unblocked and at their defaults. */
static pid_t start_point(const sr_job *j, const sr_point *p, int64_t steps, int k) {
    char *av[160], buf[16384], logp[GF_PATH_MAX + 8];
    int n = point_argv(j, p, steps, av, buf, sizeof buf - 32);
    if (n < 0) return cli_error("a point's command line is over 16 KiB"), -1;
    char threads[32], where[GF_PATH_MAX + 32] = "";
    const int t = gf_threads() / j->jobs; /* each point its share of the search's threads */
    snprintf(threads, sizeof threads, "%d", t < 1 ? 1 : t);
    av[n++] = "--threads", av[n++] = threads, av[n] = NULL;
    if (j->jobs > 1) {
        if (log_path(p, logp, sizeof logp, true)) return -1;
        snprintf(where, sizeof where, " (its output: %s)", gf_show_name(logp));
    }
    fprintf(stderr, "== search: point %d of %d%s: ", (int)(p - j->p) + 1, j->n, where);
    print_argv(stderr, av);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t def, none;
    sigemptyset(&def), sigaddset(&def, SIGINT), sigaddset(&def, SIGTERM), sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (j->jobs > 1) posix_spawn_file_actions_addopen(&fa, 2, logp, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    const int err = posix_spawn(&pid, "/proc/self/exe", &fa, &at, av, environ);
    posix_spawn_file_actions_destroy(&fa), posix_spawnattr_destroy(&at);
    if (err)
        return cli_error("cannot start point %d's compare%s: %s", (int)(p - j->p) + 1, where, strerror(err)), -1;
    g_child[k] = pid;
    return pid;
}

/* The last lines of a failed point's log, to stderr (--jobs above 1: its compare said why there) */
static void show_log_tail(const sr_point *p) {
    char path[GF_PATH_MAX + 8];
    size_t n = 0;
    char *text = log_path(p, path, sizeof path, false) ? NULL : (char *)gf_read_file(path, (size_t)64 << 20, &n);
    if (!text) return;
    size_t at = n;
    for (int lines = 0; at > 0 && !(text[at - 1] == '\n' && ++lines > 12); at--) {}
    fprintf(stderr, "== the end of %s:\n%.*s", gf_show_name(path), (int)(n - at), text + at);
    free(text);
}

/* ---- the rungs --------------------------------------------------------------------------------------------- */

/* p's steps at rung r (halving: rung 0 the share `first` of its budget, at least 1); 0: the epoch budget */
static int64_t rung_steps(const sr_job *j, const sr_point *p, int rung) {
    if (!j->eta || rung) return p->steps;
    const int64_t s = (int64_t)ceil(j->first * (double)p->steps);
    return s < 1 ? 1 : s;
}

/* OUT/halving.json: each point's mean validation score at its first rung, recorded when that rung ended, so that
 * the choice does not change as the kept points go on (and a rerun makes the same one) */
static int halving_path(const sr_job *j, char *path, size_t n) {
    return gf_path_join(path, n, j->out, "halving.json") ? cli_error("%s", gf_last_error()) : EXIT_OK;
}

/* p's key there: its folder under OUT */
static const char *rel(const sr_job *j, const sr_point *p) {
    const size_t n = strlen(j->out);
    return !strncmp(p->dir, j->out, n) && p->dir[n] == '/' ? p->dir + n + 1 : p->dir;
}

static void halving_read(sr_job *j) {
    char path[GF_PATH_MAX];
    size_t n;
    for (int i = 0; i < j->n; i++) j->p[i].first_val = NAN;
    char *text = halving_path(j, path, sizeof path) ? NULL : (char *)gf_read_file(path, (size_t)16 << 20, &n);
    cJSON *d = text ? cJSON_ParseWithLength(text, n) : NULL;
    for (int i = 0; i < j->n; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, rel(j, &j->p[i]));
        if (cJSON_IsNumber(v)) j->p[i].first_val = v->valuedouble;
    }
    cJSON_Delete(d);
    free(text);
}

static int halving_write(const sr_job *j) {
    char path[GF_PATH_MAX];
    cJSON *d = cJSON_CreateObject();
    for (int i = 0; d && i < j->n; i++)
        if (!isnan(j->p[i].first_val)) cJSON_AddNumberToObject(d, rel(j, &j->p[i]), j->p[i].first_val);
    char *text = d ? cJSON_Print(d) : NULL;
    int rc = !text ? cli_error("out of memory") : halving_path(j, path, sizeof path);
    if (!rc && gf_write_file_atomic(path, text, strlen(text))) rc = cli_error("%s", gf_last_error());
    cJSON_Delete(d);
    free(text);
    return rc;
}

/* The search stopped by a signal (rc 128 + it) while the n points stopped[] ran (none: between points): what
 * to run again */
static int interrupted(const sr_job *j, const int *stopped, int n, int rc) {
    if (!n) fprintf(stderr, "grassflow search: stopped between points (exit %d); what ran is kept\n", rc);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "grassflow search: stopped during point %d of %d (%s; exit %d)%s\n", stopped[i] + 1, j->n,
                gf_show_name(j->p[stopped[i]].dir), rc,
                i < n - 1 ? "" : n > 1 ? "; what they and the points before them ran is kept"
                                       : "; what it and the points before it ran is kept");
    fprintf(stderr, "resume with: grassflow search ");
    char jobs[16];
    snprintf(jobs, sizeof jobs, "%d", j->jobs);
    char *av[] = {(char *)j->spec_path, "--out", (char *)j->out, j->jobs > 1 ? "--jobs" : NULL, jobs, NULL};
    print_argv(stderr, av);
    return rc;
}

/* What point p's end (wait status st) means: EXIT_OK to go on, else the search's exit code (128 + a signal: it
 * stopped and saved its state; else after the message). The tables are rewritten, and at the first rung its
 * score kept for halving. A point killed by a signal while nothing was stopping it (SIGKILL, a crash) failed. */
static int point_ended(sr_job *j, sr_point *p, int rung, int st) {
    /* killed by a signal: stopped if the search was stopping the points (it died before its handler was in) */
    const bool killed = WIFSIGNALED(st) && !g_stop && !g_passed;
    const int i = (int)(p - j->p) + 1;
    const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : killed ? EXIT_RUNTIME : 128 + WTERMSIG(st);
    const int wrc = sr_report(j, false);
    if (j->jobs > 1 && rc && rc < 128) show_log_tail(p);
    if (killed)
        return cli_error("point %d of %d (%s) was killed by signal %d (%s) before it could save its state; the search "
                         "stops here (what finished is kept; run the search again to go on from its last save)", i, j->n,
                         gf_show_name(p->dir), WTERMSIG(st), strsignal(WTERMSIG(st)));
    if (rc >= 128) return rc;
    if (rc)
        return cli_error("point %d of %d (%s) failed (exit %d): its compare said why, above; the search stops here "
                         "(the points before it are kept%s)", i, j->n, gf_show_name(p->dir), rc,
                         j->jobs > 1 ? ", and those running beside it stop with their state saved" : "");
    if (wrc) return wrc;
    if (j->eta && !rung && isnan(p->first_val)) {
        p->first_val = sr_point_val(p, NULL);
        if (halving_write(j)) return EXIT_RUNTIME;
    }
    return g_stop ? 128 + (int)g_stop : EXIT_OK;
}

/* Start points of rung r into the free slots of run[] (up to --jobs at once), in order, skipping those dropped
 * or finished, *running counting them: EXIT_OK, or EXIT_RUNTIME after the message (a point could not start; those
 * started are in run[]). */
static int fill_slots(sr_job *j, int rung, sr_point **run, int *next, int *running) {
    sigset_t both, old;
    sigemptyset(&both), sigaddset(&both, SIGINT), sigaddset(&both, SIGTERM);
    for (int k = 0; k < j->jobs && !g_stop; k++) {
        while (*next < j->n && (j->p[*next].dropped || sr_point_at(&j->p[*next], rung_steps(j, &j->p[*next], rung))))
            ++*next;
        if (*next == j->n) break;
        if (run[k]) continue;
        sr_point *p = &j->p[(*next)++];
        sigprocmask(SIG_BLOCK, &both, &old);
        g_spawning = 1;
        const pid_t pid = g_stop ? 0 : start_point(j, p, rung_steps(j, p, rung), k);
        sigprocmask(SIG_SETMASK, &old, NULL); /* a signal that came meanwhile: handled here, g_spawning set */
        g_spawning = 0;
        if (pid < 0) return EXIT_RUNTIME;
        if (pid > 0) run[k] = p, ++*running;
    }
    return EXIT_OK;
}

/* Rung r of every point not dropped: its compare run (or read back), up to --jobs at once, the tables rewritten
 * after each. The first failure or stop stops the points running beside it (each saves its state) and ends the
 * rung once they have ended. */
static int run_rung(sr_job *j, int rung) {
    struct sigaction pass = {.sa_sigaction = pass_signal, .sa_flags = SA_SIGINFO}, old_int, old_term, old_chld;
    struct sigaction dfl = {.sa_handler = SIG_DFL}; /* (SIGCHLD ignored, as a parent may leave it: no wait status) */
    sigemptyset(&pass.sa_mask), sigaddset(&pass.sa_mask, SIGINT), sigaddset(&pass.sa_mask, SIGTERM);
    sigemptyset(&dfl.sa_mask);
    sr_point *run[SR_MAX_JOBS] = {0};
    int next = 0, running = 0, rc = EXIT_OK, stopped[SR_MAX_JOBS], n_stopped = 0;
    for (int k = 0; k < SR_MAX_JOBS; k++) g_child[k] = 0;
    g_passed = 0, g_stop = 0, g_spawning = 0;
    sigaction(SIGINT, &pass, &old_int), sigaction(SIGTERM, &pass, &old_term), sigaction(SIGCHLD, &dfl, &old_chld);
    for (;;) {
        if (!rc && fill_slots(j, rung, run, &next, &running)) rc = EXIT_RUNTIME, stop_others();
        if (!running) break;
        int st = 0, k = 0;
        pid_t w;
        while ((w = waitpid(-1, &st, 0)) < 0 && errno == EINTR) {}
        if (w < 0) { /* cannot happen while a child runs: said, not taken for success */
            rc = cli_error("waiting for the points: %s", strerror(errno)), stop_others();
            break;
        }
        while (k < j->jobs && g_child[k] != w) k++;
        if (k == j->jobs) continue;
        sr_point *p = run[k];
        g_child[k] = 0, run[k] = NULL, running--;
        const int prc = point_ended(j, p, rung, st);
        if (prc >= 128) stopped[n_stopped++] = (int)(p - j->p);
        if (prc && !rc) rc = prc;
        if (prc) stop_others();
    }
    sigaction(SIGINT, &old_int, NULL), sigaction(SIGTERM, &old_term, NULL), sigaction(SIGCHLD, &old_chld, NULL);
    if (!rc && g_stop) rc = 128 + (int)g_stop;
    return rc >= 128 ? interrupted(j, stopped, n_stopped, rc) : rc;
}

static int by_first_val(const void *a, const void *b) {
    const sr_point *x = *(sr_point *const *)a, *y = *(sr_point *const *)b;
    const double u = x->first_val, v = y->first_val; /* lower first (the caller flips scores) */
    return (u > v) - (u < v);
}

/* Halving: in each search, the best ceil(n / eta) points by their first rung's score go on; the rest are
 * dropped. A point whose first score halving.json lacks (the file lost) takes its summary's when it is still at
 * the first rung; one that went on already goes on, and counts among those kept. */
static void choose(sr_job *j) {
    bool lower = true;
    for (int i = 0; i < j->n; i++) sr_point_val(&j->p[i], &lower);
    sr_point **v = malloc((size_t)j->n * sizeof *v);
    double *key = malloc((size_t)j->n * sizeof *key);
    for (int i = 0; key && i < j->n; i++) { /* the sort key: lower first; went on: first of all */
        sr_point *p = &j->p[i];
        const int64_t s0 = rung_steps(j, p, 0);
        if (isnan(p->first_val) && sr_point_at(p, s0) && !sr_point_at(p, s0 + 1)) p->first_val = sr_point_val(p, NULL);
        key[i] = p->first_val, p->first_val = isnan(key[i]) ? -INFINITY : lower ? key[i] : -key[i];
    }
    for (int e = 0; v && key && e < j->n_entries; e++) {
        int n = 0;
        for (int i = 0; i < j->n; i++)
            if (j->p[i].entry == e) v[n++] = &j->p[i];
        qsort(v, (size_t)n, sizeof *v, by_first_val);
        const int keep = (n + j->eta - 1) / j->eta;
        for (int k = 0; k < n; k++) v[k]->dropped = k >= keep;
    }
    for (int i = 0; key && i < j->n; i++) j->p[i].first_val = key[i];
    free(v), free(key);
}

static void print_plan(const sr_job *j) {
    char *av[160], buf[16384];
    printf("%d point%s in %d search%s, seeds %s, %s%s\n", j->n, j->n == 1 ? "" : "s", j->n_entries,
           j->n_entries == 1 ? "" : "es", j->seeds,
           j->tokens ? "a budget of tokens" : j->steps ? "a budget of steps" : "a budget of epochs",
           j->eta ? " (halving: every point first runs a share of it)" : "");
    for (int i = 0; i < j->n; i++)
        if (point_argv(j, &j->p[i], rung_steps(j, &j->p[i], 1), av, buf, sizeof buf) > 0) print_argv(stdout, av);
}

static int parse(sr_job *j, int argc, char **argv) {
    static const struct option opts[] = {{"out", 1, 0, 'o'}, {"plan", 0, 0, 'p'}, {"json", 0, 0, 'j'},
                                         {"jobs", 1, 0, 'J'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    j->out = "runs/search";
    j->jobs = 1;
    int64_t jobs;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'h') return help(), -1;
        if (c == 'o') j->out = optarg;
        else if (c == 'p') j->plan = true;
        else if (c == 'j') j->json = true;
        else if (c == 'J') {
            if (cli_parse_i64("search", "--jobs", optarg, 1, SR_MAX_JOBS, &jobs)) return EXIT_USAGE;
            j->jobs = (int)jobs;
        }
        else return cli_usage_error("search", "unknown option");
    }
    if (optind != argc - 1) return cli_usage_error("search", "give one spec file (SPEC.json)");
    j->spec_path = argv[optind];
    return cli_utf8_arg("search", "--out", j->out);
}

int cmd_search(int argc, char **argv) {
    sr_job j = {0};
    int rc = parse(&j, argc, argv);
    if (!rc) rc = read_spec(&j);
    if (!rc && j.plan) print_plan(&j);
    if (!rc && !j.plan) {
        halving_read(&j);
        rc = sr_report(&j, false); /* what the folders hold already: the rungs skip what finished */
        if (!rc) rc = run_rung(&j, 0);
        if (!rc && j.eta) choose(&j), rc = run_rung(&j, 1);
        if (!rc) rc = sr_report(&j, true);
        if (!rc) rc = sr_print(&j);
    }
    for (int i = 0; j.p && i < j.n; i++) cJSON_Delete(j.p[i].summary);
    free(j.p);
    cJSON_Delete(j.spec);
    return rc < 0 ? EXIT_OK : rc;
}
