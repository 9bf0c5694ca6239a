/*
 * Daemon logging: one line per event on stderr (launchd's StandardErrorPath,
 * the systemd journal, or the terminal). Secrets never reach these calls:
 * exec environments are not logged and command lines are logged by argv[0].
 */
#ifndef LANED_LOG_H
#define LANED_LOG_H

#include <stdarg.h>
#include <stdbool.h>

void log_init(const char *progname, bool debug);
bool log_debug_enabled(void);

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Like log_warnx with ": strerror(errno)" appended. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Logs and exits 1; only for broken invariants and start-up failures. */
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
