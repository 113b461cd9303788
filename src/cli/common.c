#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include <libgen.h>
#include <sys/stat.h>
#include <unistd.h>


/* The message of fmt to stderr with its control bytes and bytes that are not UTF-8 shown as \xNN
 * (gf_print_lines): a name that reached it unescaped (gf_show_name) cannot send the terminal an escape
 * sequence. */
static void print_message(const char *fmt, va_list ap) {
    char small[4096], *msg = small;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) vsnprintf(msg, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    gf_print_lines(stderr, msg ? msg : small);
    if (msg != small) free(msg);
}

int cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("grassflow: error: ", stderr);
    print_message(fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_RUNTIME;
}

/* Standard output goes through a stream whose write function keeps the reason of the first failed write:
 * stdio keeps only an error flag, and errno is long overwritten by the time main looks. */
static int stdout_errno;      /* why a write to fd 1 failed; 0: none did */
static bool stdout_reported;  /* the failure was said once; later checks stay quiet */
static FILE *plain_stdout;    /* glibc's own stdout, put back once ours is closed */

static ssize_t stdout_write(void *cookie, const char *buf, size_t n) {
    (void)cookie;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!stdout_errno) stdout_errno = w < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int stdout_close(void *cookie) {
    (void)cookie;
    return close(STDOUT_FILENO);
}

void cli_stdout_init(void) {
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){.write = stdout_write, .close = stdout_close});
    if (!f) return; /* the plain stdout: failures are still caught, with a vaguer reason */
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    plain_stdout = stdout;
    stdout = f; /* glibc's stdout is a plain variable */
}

bool cli_stdout_failed(void) {
    errno = 0;
    const bool ok = fflush(stdout) == 0 && !ferror(stdout);
    if (ok) return false;
    const int err = stdout_errno ? stdout_errno : errno;
    if (!stdout_reported && err && err != EPIPE) /* a closed pipe is the reader's choice, not a fault to fix */
        cli_error("writing standard output: %s\nHINT: %s", strerror(err), gf_write_hint(err));
    else if (!stdout_reported)
        cli_error("writing standard output: %s", err ? strerror(err) : "write error");
    stdout_reported = true;
    return true;
}

int cli_stdout_close(int rc) {
    bool bad = cli_stdout_failed();
    errno = 0;
    /* EBADF with nothing written: stdout was closed (>&-) and the command printed nothing, which is fine */
    const bool close_failed = fclose(stdout) != 0;
    const int err = errno;
    if (plain_stdout) stdout = plain_stdout; /* never a freed FILE, should anything print after main */
    if (close_failed && !bad && err != EBADF) {
        cli_error("closing standard output: %s\nHINT: %s", strerror(err), gf_write_hint(err));
        bad = true;
    }
    return bad && rc == EXIT_OK ? EXIT_RUNTIME : rc;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "grassflow %s: ", cmd);
    print_message(fmt, ap);
    fprintf(stderr, "\nTry 'grassflow %s --help'.\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_utf8_arg(const char *cmd, const char *flag, const char *s) {
    const int64_t at = s ? gf_utf8_invalid_at(s) : -1;
    if (at < 0) return EXIT_OK;
    return cli_usage_error(cmd, "%s %s: byte %lld (0x%02x) is not UTF-8; the path is recorded in the run's "
                           "checkpoints, whose headers are JSON, and JSON holds UTF-8 text\nHINT: rename it to a "
                           "UTF-8 name (or give it through a symbolic link whose name is UTF-8); nothing was written",
                           flag, gf_show_name(s), (long long)at, (unsigned)(unsigned char)s[at]);
}

int cli_parse_i64(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return cli_usage_error(cmd, "%s expects an integer in [%lld, %lld], got '%s'", flag, (long long)lo,
                               (long long)hi, s);
    *out = (int64_t)v;
    return EXIT_OK;
}

int cli_split_list(const char *cmd, const char *flag, const char *arg, char *buf, size_t cap, char **items, int max,
                   const char *what, int *n) {
    if (strlen(arg) >= cap) return cli_usage_error(cmd, "%s is longer than %zu characters", flag, cap - 1);
    snprintf(buf, cap, "%s", arg);
    *n = 0;
    for (char *p = buf, *comma;; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p)
            return cli_usage_error(cmd, "%s %s: item %d is empty; expected a list like a,b,c (no empty item, no comma "
                                   "at either end)", flag, arg, *n + 1);
        for (int k = 0; k < *n; k++)
            if (!strcmp(items[k], p))
                return cli_usage_error(cmd, "%s %s: lists %s twice; give each once", flag, arg, p);
        if (*n == max) return cli_usage_error(cmd, "%s lists more than %d %s; give at most %d", flag, max, what, max);
        items[(*n)++] = p;
        if (!comma) return EXIT_OK;
    }
}

int cli_model_option(cli_model_opts *o, const char *cmd, int opt, const char *arg) {
    switch (opt) {
    case OPT_MODEL: o->preset = arg; return 1;
    case OPT_CONFIG: o->config_path = arg; return 1;
    case OPT_VOCAB: {
        int rc = cli_parse_i64(cmd, "--vocab", arg, 1, 2147483647, &o->vocab);
        return rc ? rc : 1;
    }
    case OPT_SET:
        if (o->n_sets == (int)(sizeof o->sets / sizeof o->sets[0]))
            return cli_usage_error(cmd, "too many --set options (at most 64)");
        o->sets[o->n_sets++] = arg;
        return 1;
    default: return 0;
    }
}

int cli_model_config(const cli_model_opts *o, const char *cmd, gf_config *cfg) {
    int rc = cli_model_base(o, cmd, cfg);
    return rc ? rc : cli_model_sets(o, cmd, cfg);
}

int cli_model_sets(const cli_model_opts *o, const char *cmd, gf_config *cfg) {
    for (int i = 0; i < o->n_sets; i++)
        if (gf_config_set(cfg, o->sets[i])) return cli_usage_error(cmd, "%s", gf_last_error());
    return EXIT_OK;
}

int cli_model_base(const cli_model_opts *o, const char *cmd, gf_config *cfg) {
    if (o->preset && o->config_path) return cli_usage_error(cmd, "give --model or --config, not both");
    if (!o->preset && !o->config_path) return cli_usage_error(cmd, "which model? give --model PRESET or --config FILE");
    if (o->preset ? gf_config_preset(o->preset, cfg) : gf_config_load(o->config_path, cfg))
        return o->preset ? cli_usage_error(cmd, "--model: %s", gf_last_error()) : cli_error("%s", gf_last_error());
    if (o->vocab) {
        char kv[64];
        snprintf(kv, sizeof kv, "vocab_size=%lld", (long long)o->vocab);
        if (gf_config_set(cfg, kv)) return cli_usage_error(cmd, "--vocab: %s", gf_last_error());
    }
    return EXIT_OK;
}

int cli_parse_f(const char *cmd, const char *flag, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return cli_usage_error(cmd, "%s expects a number in [%g, %g], got '%s'", flag, lo, hi, s);
    *out = v;
    return EXIT_OK;
}

int cli_parse_f_below(const char *cmd, const char *flag, const char *s, double lo, double lim, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && (float)v < (float)lim)) /* below lim also once stored as float */
        return cli_usage_error(cmd, "%s expects a number in [%g, %g), got '%s'", flag, lo, lim, s);
    *out = v;
    return EXIT_OK;
}

int cli_copy_arg(const char *cmd, const char *flag, const char *s, char *dst, size_t cap) {
    size_t n = strlen(s);
    if (n >= cap) return cli_usage_error(cmd, "%s is %zu bytes long; the most it takes is %zu", flag, n, cap - 1);
    memcpy(dst, s, n + 1);
    return EXIT_OK;
}

const char *cli_ppl(char *buf, size_t n, double ppl, int decimals) {
    if (!isfinite(ppl)) snprintf(buf, n, "inf");
    else if (ppl >= 1e6) snprintf(buf, n, "%.3e", ppl);
    else snprintf(buf, n, "%.*f", decimals, ppl);
    return buf;
}

void cli_warn_ppl(double ppl, int64_t vocab) {
    if (!(ppl >= 1e6) || !(ppl > 2.0 * (double)vocab)) return;
    fprintf(stderr, "grassflow: warning: perplexity %.3e, far above the vocabulary size %lld: the model predicts much "
                    "worse than a uniform guess (diverged, or scored on text it was not trained for)\n", ppl,
            (long long)vocab);
}

static int dir_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cli_data_dir(void) {
    static char buf[4096];
    const char *env = getenv("GRASSFLOW_DATA");
    if (env && *env) return env;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        const char *bin = dirname(exe);
        int len = snprintf(buf, sizeof buf, "%s/../data", bin); /* a build tree: build/grassflow */
        if (len < (int)sizeof buf && dir_exists(buf)) return buf;
        len = snprintf(buf, sizeof buf, "%s/../share/grassflow/data", bin); /* make install's PREFIX/bin */
        if (len < (int)sizeof buf && dir_exists(buf)) return buf;
    }
    return "data";
}

const char *cli_cache_dir(void) {
    static char buf[4096];
    const char *env = getenv("GRASSFLOW_CACHE");
    if (env) return *env ? env : NULL;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (xdg && *xdg) len = snprintf(buf, sizeof buf, "%s/grassflow", xdg);
    else if (home && *home) len = snprintf(buf, sizeof buf, "%s/.cache/grassflow", home);
    else return NULL;
    return len < (int)sizeof buf ? buf : NULL; /* too long a path: no cache rather than another folder */
}

gf_model *cli_load_checkpoint(const char *path, gf_tokenizer **tok, char **train_json) {
    return gf_checkpoint_load(path, tok, train_json);
}

char *cli_piece(const gf_tokenizer *tok, int32_t id) {
    size_t len;
    const char *s = gf_tokenizer_piece(tok, id, &len);
    char *out = s ? malloc(len + 1) : NULL;
    if (out) memcpy(out, s, len), out[len] = '\0';
    return out;
}

const char *cli_escape_cut(char *buf, size_t n, const char *s, int width) {
    if (gf_escape_term(buf, n, s, width) >= n) {
        gf_escape_term(buf, n - 3, s, 0);
        strcat(buf, "...");
    }
    return buf;
}

int cli_weights_option(const char *cmd, const char *arg, gf_weights *w) {
    if (gf_weights_parse(arg, w)) return cli_usage_error(cmd, "--weights expects fp32, bf16 or int8, not '%s'", arg);
    return EXIT_OK;
}

int cli_set_weights(gf_model *m, gf_weights w, const char *what) {
    if (w == gf_model_weights(m)) return EXIT_OK;
    if (gf_model_set_weights(m, w)) return cli_error("%s: --weights %s: %s", what, gf_weights_name(w), gf_last_error());
    return EXIT_OK;
}

void cli_print_presets(const char *indent, int first) {
    int col = first;
    for (const char *const *p = gf_preset_names(); *p; p++) {
        const int w = (int)strlen(*p) + 1; /* the name and its comma */
        if (p != gf_preset_names()) col += col + 1 + w > 100 ? printf("\n%s", indent) - 1 - col : printf(" ");
        col += printf("%s%s", *p, p[1] ? "," : "");
    }
}

void cli_model_help(void) {
    printf("  --model PRESET      a built-in model (grassflow info --presets: sizes and layers):\n"
           "                      ");
    cli_print_presets("                      ", 22);
    printf("\n  --config FILE       a JSON config instead (keys: docs/model.md; \"base\": PRESET to start from one)\n"
           "  --vocab N           set vocab_size (default: the preset's, 30522 for the paper-sized ones)\n"
           "  --set KEY=VALUE     override any config key, repeatable: --set norm=post --set rank=16\n"
           "                      --set offsets=1,2,4 (every layer of every stack) --set mixers=g,g,a,g,g,g\n"
           "                      --set layers.2.rank=8 (a list, one value per layer: the first stack's)\n"
           "                      (a mixer's keys: grassflow info --mixers)\n");
}

/* What a path that is not a regular file is, for cli_output_check's message. */
static const char *node_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int cli_output_check(const char *path, const char *flag, const char *const *inputs, int n_inputs, bool may_replace,
                     const char *replace_hint) {
    struct stat st, in;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return gf_fail("cannot check %s: %s (%s)", gf_show_name(path), strerror(errno), flag);
    }
    if (!S_ISREG(st.st_mode))
        return gf_fail("%s is %s; grassflow writes only regular files and never replaces a device node, a FIFO or "
                       "a directory (%s)\nHINT: give the path of a file", gf_show_name(path), node_kind(st.st_mode),
                       flag);
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
            return gf_fail("%s %s is %s, which this command reads; it would be replaced by what is made from it\n"
                           "HINT: give another %s", flag, gf_show_name(path),
                           strcmp(path, inputs[i]) ? gf_show_name(inputs[i]) : "an input", flag);
    if (!may_replace)
        return gf_fail("%s %s exists and is not replaced%s\nHINT: %s, or give another %s", flag, gf_show_name(path),
                       replace_hint ? "" : " (this command never replaces a file)",
                       replace_hint ? replace_hint : "remove it", flag);
    return 0;
}

void cli_shell_word(char *dst, size_t cap, size_t *len, const char *arg) {
    bool plain = *arg != '\0';
    for (const char *c = arg; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%", *c)) plain = false;
    if (*len < cap) *len += (size_t)snprintf(dst + *len, cap - *len, plain ? "%s%s" : "%s'", *len ? " " : "", plain ? arg : "");
    for (const char *c = arg; !plain && *c && *len < cap; c++)
        *len += (size_t)snprintf(dst + *len, cap - *len, *c == '\'' ? "'\\''" : "%c", *c);
    if (!plain && *len < cap) *len += (size_t)snprintf(dst + *len, cap - *len, "'");
}
