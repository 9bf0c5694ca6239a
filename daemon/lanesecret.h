/*
 * Lane secrets: credentials a lane uses without holding them (create
 * --secret NAME@HOST[,HOST...], and --secret-header
 * NAME=HEADER[,HEADER...] for headers the value may go in besides the
 * default credential ones). The guest gets a placeholder in NAME; the
 * lane's egress proxy puts the value in its place only in requests to the
 * secret's hosts (the proxy's side, and the set the lane keeps its values
 * in, is daemon/secret.h). This module is the way there:
 *
 *  - the check of a create's secrets against the configured ones (the
 *    `secret` key names variables every create must bring, and their
 *    hosts), with the values copied off the request;
 *  - the placeholders: a fixed prefix and 192 bits from the OS random
 *    source, all of one length, so that none is a part of another;
 *  - the text the registry keeps (names, hosts and headers, never
 *    values);
 *  - sealing a checked set into the proxy's struct secret_set, which the
 *    lane holds for its life and wipes when it ends.
 *
 * The values are in this daemon's memory and nowhere else: not in the
 * registry, the events, the logs, the state directory, the guest, or a
 * host command line. After a restart they are gone, and so is every lane
 * that had them (lane_recover destroys it, saying why).
 */
#ifndef LANED_LANESECRET_H
#define LANED_LANESECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text.h"
#include "wire.h"

#define LANESECRET_MAX 16		/* secrets of one lane */
#define LANESECRET_HOSTS_MAX 16		/* host patterns of one secret */
#define LANESECRET_HOSTS_TEXT_MAX 1024	/* one secret's patterns, '\n' between */
#define LANESECRET_HEADERS_MAX TEXT_SECRET_HEADERS_MAX	/* of one secret */
/*
 * A lane's names, hosts and headers as the registry keeps them
 * (lanesecret_text), and the configured ones likewise.
 */
#define LANESECRET_TEXT_MAX 2048

/*
 * "AGENTLANE_SECRET_" and 48 lower-case hex digits (192 random bits): no
 * character any header, URL, JSON or Basic encoding changes, the last 20
 * (what Claude Code tells custom keys apart by) all random.
 */
#define LANESECRET_PH_PREFIX "AGENTLANE_SECRET_"
#define LANESECRET_PH_RANDOM 24		/* bytes */
#define LANESECRET_PH_LEN (sizeof(LANESECRET_PH_PREFIX) - 1 + \
	2 * LANESECRET_PH_RANDOM)

struct secret_set;

/* A checked secret of a create, before it is sealed. */
struct lanesecret {
	char name[TEXT_SECRET_NAME_MAX + 1];
	/* Normalised patterns (hostrule_check), '\n' between. */
	char hosts[LANESECRET_HOSTS_TEXT_MAX + 1];
	size_t nhosts;
	/* Its own credential headers (text_secret_header_valid), lower case. */
	char headers[LANESECRET_HEADERS_MAX][TEXT_SECRET_HEADER_MAX + 1];
	size_t nheaders;
	uint8_t *value;			/* wiped by lanesecret_set_free */
	size_t value_len;
};

struct lanesecret_set {
	size_t n;
	struct lanesecret s[LANESECRET_MAX];
};

/*
 * A create's secrets (req[0..nreq)) checked against the configured ones
 * (conf: lanesecret_config_add's text, may be ""). Every configured name
 * must be in the request (FAILED_PRECONDITION otherwise: the daemon never
 * has a value of its own); a request entry without hosts takes the
 * configured ones, and one without headers the configured headers. Returns
 * 0 with *out set (NULL when there are no secrets; placeholders not made
 * yet), or the agentlane.v1.ErrorCode with err. No I/O: unit-tested like
 * lanecheck_create.
 */
int lanesecret_plan(const char *conf, Agentlane__V1__Secret *const *req,
    size_t nreq, struct lanesecret_set **out, char *err, size_t errlen);

/*
 * The lane's secret set: a placeholder made for each secret, the values
 * moved into it (the proxy's struct secret_set), and the checked set wiped
 * and freed whatever happens. NULL with err if the random source failed.
 */
struct secret_set *lanesecret_seal(struct lanesecret_set *, char *err,
    size_t errlen);
/*
 * One placeholder into buf (LANESECRET_PH_LEN + 1 bytes); -1 if the OS
 * random source failed.
 */
int lanesecret_placeholder_make(char *buf, size_t len);

/* Wipes every value and frees the set (NULL: nothing). */
void lanesecret_set_free(struct lanesecret_set *);

/*
 * The names, hosts and headers of a set, as the registry keeps them: a
 * line a secret, "NAME HOST HOST... :HEADER :HEADER...", '\n' between
 * (no host or header name has a ':', so a text from before headers is
 * one without). -1 if len is too small.
 */
int lanesecret_text(const struct lanesecret_set *, char *buf, size_t len);

/* One secret of a registry text, pointing into the text (split in place). */
struct lanesecret_info {
	const char *name;
	const char *hosts[LANESECRET_HOSTS_MAX];
	size_t nhosts;
	const char *headers[LANESECRET_HEADERS_MAX];	/* without the ':' */
	size_t nheaders;
};

/* Splits text in place into up to max entries; returns the count. */
size_t lanesecret_text_split(char *text, struct lanesecret_info *, size_t max);

/*
 * A `secret` configuration line, NAME@HOST[,HOST...], added to the text
 * at *conf (same shape as lanesecret_text; reallocated). -1 with err for a
 * bad line, a name given twice, or too many.
 */
int lanesecret_config_add(char **conf, const char *spec, char *err,
    size_t errlen);
/*
 * A `secret_header` configuration line, NAME=HEADER[,HEADER...]: the
 * headers added to NAME's line at *conf, which a `secret` line must have
 * made before. -1 with err for a bad line, an unknown name, a header
 * text_secret_header_valid refuses, or more than LANESECRET_HEADERS_MAX.
 */
int lanesecret_config_header(char **conf, const char *spec, char *err,
    size_t errlen);

/* Wipes the secrets' values in a request before it is freed. */
void lanesecret_wipe_request(Agentlane__V1__CreateLane *);

/* The set's entry for a variable name, or NULL. */
const struct lanesecret *lanesecret_find(const struct lanesecret_set *,
    const char *name);

#endif
