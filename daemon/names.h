/*
 * The shapes of the names the daemon hands out and takes: lane names
 * ("al-" + 16 hex), image instance names ("ali-" + 16 hex), create --name
 * aliases, image names, and the prefixes of lane names a client may give.
 * The bottom of the daemon: pure string rules that call nothing else, so
 * that config, image, lane, lima, lanecreate and imagebuild agree on them
 * without including each other.
 */
#ifndef LANED_NAMES_H
#define LANED_NAMES_H

#include <stdbool.h>

#define NAMES_LANE_PREFIX "al-"
#define NAMES_LANE_PREFIX_LEN 3
#define NAMES_HEX_LEN 16	/* the random digits of a lane or image name */
#define NAMES_LANE_LEN 19	/* strlen("al-") + 16 */
/*
 * Images are instances too, named "ali-" + 16 hex: never a lane name, so an
 * image can never be handed out, exec'd into or destroyed as a lane.
 */
#define NAMES_IMAGE_PREFIX "ali-"
#define NAMES_IMAGE_PREFIX_LEN 4
#define NAMES_IMAGE_INSTANCE_LEN 20
/* create --name: [a-z0-9][a-z0-9._-]{0,62}, not beginning "al-". */
#define NAMES_ALIAS_MAX 63
/* image build NAME: 1-63 of [a-z0-9._-]. */
#define NAMES_IMAGE_SIZE 64

/* A lane name: "al-" and 16 lowercase hex digits, nothing else. */
bool names_lane_valid(const char *);
/* An image instance name: "ali-" and 16 lowercase hex digits. */
bool names_image_instance_valid(const char *);
/* Either: a name this daemon may pass to limactl. */
bool names_instance_valid(const char *);

/*
 * The shape of an alias: [a-z0-9][a-z0-9._-]{0,62}, and not "al-..." or
 * "ali-..." (a VM name, or its prefix, would then mean two things).
 */
bool names_alias_shape(const char *);
/*
 * A new create --name alias: that shape, and not 1-16 hex digits alone,
 * which are also the digits of lane names (a prefix; lane_resolve). Rows
 * from before this rule may still hold such an alias.
 */
bool names_alias_valid(const char *);

/* An image name: 1-63 characters of [a-z0-9._-], starting with [a-z0-9]. */
bool names_image_valid(const char *);
/*
 * An image id as image ls shows it, or a prefix of one: 1-64 lowercase
 * hex digits (the sha256 of its inputs).
 */
#define NAMES_IMAGE_ID_LEN 64
bool names_image_id_prefix(const char *);

/*
 * A prefix of a lane name as a client writes it: "al-" and 1-16 hex
 * digits. "al-" alone is none: an empty $ID in `rm "al-$ID"` must not
 * mean every lane.
 */
bool names_lane_prefix(const char *);
/* The digits of a lane name without "al-": 1-16 lowercase hex digits. */
bool names_lane_digits(const char *);

#endif
