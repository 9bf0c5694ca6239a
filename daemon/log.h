/*
 * Daemon logging: one line per event on stderr (launchd's StandardErrorPath,
 * the systemd journal, or the terminal) and, once log_open_file() ran, in
 * <state_dir>/log/agent-laned.log too, so that `agent-lanectl logs` has
 * one place to read on every host. That file is bounded: past half the
 * cap it is renamed to agent-laned.log.1 (replacing the older one) and a
 * new one begins, so the two never hold much more than the cap. Secrets
 * never reach these calls: exec environments are not logged and command
 * lines are logged by argv[0].
 */
#ifndef LANED_LOG_H
#define LANED_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void log_init(const char *progname, bool debug);
bool log_debug_enabled(void);
/*
 * Also writes every line to path (0600, appended, never through a
 * symbolic link), rotating it at max_bytes / 2. Call it once the daemon
 * holds its lock: a second daemon must not rotate the first one's log.
 * -1 with err set (stderr alone goes on).
 */
int log_open_file(const char *path, uint64_t max_bytes, char *err,
    size_t errlen);
/*
 * file_only: from here on lines go to the file alone, not to stderr too
 * (the LaunchAgent, whose launchd would keep an unbounded copy of stderr).
 * Only once a file is open; if it is later given up, stderr takes over.
 */
void log_file_only(bool file_only);
void log_close_file(void);

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
