/*
 * Durations and sizes as users type them, shared by the daemon's
 * configuration, the CLI and the tests so that "30s", "90m" and "1GiB" mean
 * the same thing everywhere.
 */
#ifndef AGENTLANE_UNITS_H
#define AGENTLANE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define UNITS_MS_PER_S   1000ull
#define UNITS_MS_PER_MIN (60ull * 1000ull)

/*
 * "250ms", "30s", "90m", "2h", "1d"; a plain number is counted in
 * plain_unit_ms (minutes for lane lifetimes, seconds for exec timeouts).
 * Returns 0, or -1 for anything else (including overflow past ~292 years).
 */
int units_parse_duration_ms(const char *s, uint64_t plain_unit_ms, uint64_t *out);

/* "4096", "512K", "64MiB", "1G" (binary multiples). 0 or -1. */
int units_parse_size(const char *s, uint64_t *out);

/*
 * Writes ms in the largest unit that holds it exactly ("90m", "61500ms",
 * "1d"), so that what it writes parses back to the same value.
 */
void units_format_duration(uint64_t ms, char *buf, size_t len);
/* For people: "1h30m00s", "45s", "250ms"; loses nothing above a second. */
void units_format_human(uint64_t ms, char *buf, size_t len);

#endif
