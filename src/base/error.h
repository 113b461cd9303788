/* Error reporting: the library never exits; it records a message for gf_last_error() and returns. */
#ifndef GF_CORE_ERROR_H
#define GF_CORE_ERROR_H

#include <stdbool.h>
#include <stdio.h>

#include "grassflow_plugin.h" /* gf_fail: record a formatted message as this thread's last error, return -1 (public:
                        * plug-ins report with it too) */
/* Append more text to the last error (for context such as "while loading FILE"). */
void gf_fail_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gf_clear_error(void);
/* gf_fail for a failed write: "MESSAGE: strerror(err)\nHINT: gf_write_hint(err)"; -1. */
int gf_fail_write(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Tell the user something that is not an error (a cache used, sentences cut short, a config changed): through
 * the handler of gf_set_note_handler, by default a line "grassflow: MESSAGE" on stderr. */
void gf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Drop every note from now on (true), or tell them again: a data-parallel job's ranks but rank 0 are muted when
 * they join (dist/comm.c), so that a note is told once. */
void gf_note_mute(bool mute);

#endif
