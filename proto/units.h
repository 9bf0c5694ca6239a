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
 * The one rule for plain numbers, for the daemon's configuration and
 * flags, the CLI and the provider alike: a number without a unit is taken
 * only where the name of the key, option or field says the unit
 * (max_copy_out_bytes, --max-bytes, timeoutMinutes, memoryGiB) or where it
 * counts things (cpus, max_lanes). Every other duration or size must
 * carry its unit ("90s", "30m", "8G"): a plain "90" could as well be
 * seconds as minutes, a plain "8" bytes as GiB, so it is refused. "0"
 * alone is zero in any unit and is taken.
 *
 * plain_unit: what a plain number counts where the name says it, or
 * UNITS_UNIT_REQUIRED; a plain number then fails with UNITS_NO_UNIT.
 */
#define UNITS_UNIT_REQUIRED 0
#define UNITS_NO_UNIT (-2)

/*
 * "250ms", "30s", "90m", "2h", "1d", compounds largest unit first ("1h30m",
 * "1d12h", each unit once) and a decimal fraction in the last component
 * ("1.5h", "2h0.5m"); a plain number, "90" or "1.5", as the rule above
 * says. A fraction must come out as whole milliseconds. Returns 0,
 * UNITS_NO_UNIT, or -1 for anything else (including overflow past ~146
 * years).
 */
int units_parse_duration_ms(const char *s, uint64_t plain_unit_ms, uint64_t *out);

/*
 * "4096", "512K", "64MiB", "8G", "8GB", "8g", "1.5G": B, K, M, G or T in
 * either case, optionally followed by "B" or "iB"; every multiple is binary
 * (1G = 1GB = 1GiB = 2^30). A fraction must come out as whole bytes. A
 * plain number as the rule above says (units_parse_size: bytes, for the
 * keys whose names end in "bytes"). 0, UNITS_NO_UNIT or -1.
 */
int units_parse_size_unit(const char *s, uint64_t plain_unit, uint64_t *out);
int units_parse_size(const char *s, uint64_t *out);

/*
 * Writes ms in the largest unit that holds it exactly ("90m", "61500ms",
 * "1d"), so that what it writes parses back to the same value.
 */
void units_format_duration(uint64_t ms, char *buf, size_t len);
/* For people: "1h30m00s", "45s", "250ms"; loses nothing above a second. */
void units_format_human(uint64_t ms, char *buf, size_t len);
/*
 * Sizes, the one way every message and table prints them: "512B",
 * "64KiB", "512MiB", "1.5GiB", "13.6GiB" (binary units, three figures at
 * most, rounded down, no trailing zeros; parses back as a size).
 */
void units_format_bytes(uint64_t bytes, char *buf, size_t len);

#endif
