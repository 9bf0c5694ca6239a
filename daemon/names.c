#include <string.h>

#include "names.h"

static const char hex[] = "0123456789abcdef";
static const char lower_digit[] = "abcdefghijklmnopqrstuvwxyz0123456789";
static const char name_chars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-";

/* s is 1..max lowercase hex digits and nothing after them. */
static bool
hex_run(const char *s, size_t max)
{
	size_t n = strspn(s, hex);

	return n >= 1 && n <= max && s[n] == '\0';
}

/* prefix and exactly NAMES_HEX_LEN hex digits. */
static bool
prefixed_hex(const char *s, const char *prefix, size_t plen)
{
	return s != NULL && strncmp(s, prefix, plen) == 0 &&
	    strspn(s + plen, hex) == NAMES_HEX_LEN &&
	    s[plen + NAMES_HEX_LEN] == '\0';
}

bool
names_lane_valid(const char *s)
{
	return prefixed_hex(s, NAMES_LANE_PREFIX, NAMES_LANE_PREFIX_LEN);
}

bool
names_image_instance_valid(const char *s)
{
	return prefixed_hex(s, NAMES_IMAGE_PREFIX, NAMES_IMAGE_PREFIX_LEN);
}

bool
names_instance_valid(const char *s)
{
	return names_lane_valid(s) || names_image_instance_valid(s);
}

/* [a-z0-9][a-z0-9._-]{0,max-1} */
static bool
word_valid(const char *s, size_t max)
{
	size_t n = s != NULL ? strlen(s) : 0;

	return n >= 1 && n <= max && strchr(lower_digit, s[0]) != NULL &&
	    strspn(s, name_chars) == n;
}

bool
names_alias_shape(const char *s)
{
	return word_valid(s, NAMES_ALIAS_MAX) &&
	    strncmp(s, NAMES_LANE_PREFIX, NAMES_LANE_PREFIX_LEN) != 0 &&
	    strncmp(s, NAMES_IMAGE_PREFIX, NAMES_IMAGE_PREFIX_LEN) != 0;
}

bool
names_alias_valid(const char *s)
{
	/* "0655" would be both an alias and the digits of al-0655... */
	return names_alias_shape(s) && !names_lane_digits(s);
}

bool
names_image_valid(const char *s)
{
	return word_valid(s, NAMES_IMAGE_SIZE - 1);
}

bool
names_image_id_prefix(const char *s)
{
	return s != NULL && hex_run(s, NAMES_IMAGE_ID_LEN);
}

bool
names_lane_prefix(const char *s)
{
	return s != NULL &&
	    strncmp(s, NAMES_LANE_PREFIX, NAMES_LANE_PREFIX_LEN) == 0 &&
	    hex_run(s + NAMES_LANE_PREFIX_LEN, NAMES_HEX_LEN);
}

bool
names_lane_digits(const char *s)
{
	return s != NULL && hex_run(s, NAMES_HEX_LEN);
}
