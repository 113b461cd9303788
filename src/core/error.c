#include "core/error.h"

#include <stdarg.h>
#include <string.h>

#include "grassflow.h"

static _Thread_local char g_err[4096];

int gf_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return -1;
}

void gf_fail_context(const char *fmt, ...) {
    char extra[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof extra, fmt, ap);
    va_end(ap);
    size_t n = strlen(g_err);
    snprintf(g_err + n, sizeof g_err - n, "%s", extra);
}

void gf_clear_error(void) { g_err[0] = '\0'; }

const char *gf_last_error(void) { return g_err; }
