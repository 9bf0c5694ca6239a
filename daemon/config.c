#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "lanesecret.h"
#include "log.h"
#include "names.h"
#include "nearest.h"
#include "netpolicy.h"
#include "proxy.h"
#include "units.h"
#include "util.h"
#include "wire.h"

enum config_type {
	CT_STRING,	/* free text */
	CT_PATH,	/* absolute path */
	CT_U32,		/* plain integer */
	/* Sizes and durations need their unit (units.h): "4G", "90s". */
	CT_MEMORY,	/* "4GiB", "512MiB", whole MiB; stored as MiB */
	CT_GIB,		/* "40G", whole GiB; stored as GiB */
	CT_DURATION,	/* "90s", "30m", "1h30m"; stored as ms */
	CT_BYTES,	/* size: "256MiB"; the name says bytes, so "4096" is too */
	CT_BOOL,
	CT_SHAPE,	/* "COUNT [cpus=N] [memory=SIZE] [disk=N]", repeatable */
	CT_NETMODE,	/* internet, none or allow */
	CT_ALLOW,	/* host patterns, comma or space separated, repeatable */
	CT_PORTS,	/* "443,8443": 1-16 ports */
	CT_SECRET,	/* NAME@HOST[,HOST...], repeatable */
	CT_SECRET_HEADER, /* NAME=HEADER[,HEADER...], into secret's lines */
};

struct config_key {
	const char *name;
	enum config_type type;
	size_t offset;
	uint64_t min, max;	/* for numbers, in stored units */
	const char *help;
};

#define K(n, t, mn, mx, h) { #n, t, offsetof(struct config, n), mn, mx, h }

static const struct config_key config_keys[] = {
	K(socket_path, CT_PATH, 0, 0, "control socket"),
	K(state_dir, CT_PATH, 0, 0, "registry, lock and Lima home"),
	K(limactl, CT_STRING, 0, 0, "limactl binary (name or path)"),
	K(lima_template, CT_STRING, 0, 0, "base template of every lane"),
	K(max_lanes, CT_U32, 1, 1024, "live lanes at once"),
	K(default_cpus, CT_U32, 1, 256, "cpus of a lane when not asked"),
	K(max_cpus, CT_U32, 1, 256, "most cpus a lane may ask for"),
	K(default_memory_mib, CT_MEMORY, 256, 1u << 22, "memory of a lane (4G, 512M)"),
	K(max_memory_mib, CT_MEMORY, 256, 1u << 22, "most memory a lane may ask for"),
	K(default_disk_gib, CT_GIB, 1, 65536, "disk of a lane, whole GiB (30G)"),
	K(max_disk_gib, CT_GIB, 1, 65536, "most disk a lane may ask for"),
	K(default_lifetime_ms, CT_DURATION, 1000, 366ull * 86400000, "hard lifetime when not asked"),
	K(max_lifetime_ms, CT_DURATION, 1000, 366ull * 86400000, "longest lifetime from creation, extensions included"),
	K(default_idle_timeout_ms, CT_DURATION, 0, 366ull * 86400000, "idle timeout when not asked; 0 = none"),
	K(max_exec_timeout_ms, CT_DURATION, 0, 366ull * 86400000, "longest per-exec timeout; 0 = lane deadline only"),
	K(max_copy_out_bytes, CT_BYTES, 1, 1ull << 44, "copy-out bound"),
	K(max_frame_bytes, CT_BYTES, 4096, 1u << 20, "largest protocol frame accepted"),
	K(max_connections, CT_U32, 4, 4096, "client connections at once"),
	K(max_execs_per_lane, CT_U32, 1, 1024, "concurrent execs and copies per lane"),
	K(max_env_bytes, CT_BYTES, 0, 1u << 19, "total size of one exec's environment"),
	K(max_audit_events, CT_U32, 1, 1000000, "exec and copy events kept per lane (the oldest go)"),
	K(max_log_bytes, CT_BYTES, 65536, 1ull << 32, "the daemon's log file and its one rotated copy together"),
	K(max_lane_log_bytes, CT_BYTES, 4096, 1ull << 30, "per Lima log file of a lane: kept after a failed start, sent by logs"),
	K(log_file_only, CT_BOOL, 0, 1, "log to <state_dir>/log/agent-laned.log alone once it is open, not to stderr too"),
	K(request_timeout_ms, CT_DURATION, 100, 3600000, "time for a client to send hello and its request"),
	K(start_timeout_ms, CT_DURATION, 1000, 86400000, "limactl start timeout"),
	K(command_timeout_ms, CT_DURATION, 1000, 86400000, "timeout of other limactl calls"),
	K(destroy_retry_max_ms, CT_DURATION, 100, 86400000, "longest pause between limactl delete retries"),
	K(retention_ms, CT_DURATION, 0, 3660ull * 86400000, "how long ended lanes stay in the registry"),
	K(tick_ms, CT_DURATION, 100, 3600000, "wall-clock deadline re-check period"),
	K(max_images, CT_U32, 1, 1024, "images kept at once (builds included)"),
	K(image_build_timeout_ms, CT_DURATION, 1000, 86400000, "deadline of one image build"),
	K(debug, CT_BOOL, 0, 1, "debug logging"),
	K(pool_size, CT_U32, 0, POOL_LANES_MAX, "warm pool: booted lanes of the default shape kept ready; 0 = off"),
	K(pool_shape, CT_SHAPE, 0, POOL_LANES_MAX, "warm pool: \"N cpus=C memory=M disk=D image=I\" keeps N of another shape (repeatable)"),
	K(pool_max_age_ms, CT_DURATION, 1000, 366ull * 86400000, "warm pool: a pooled lane older than this is replaced"),
	K(pool_max_boots, CT_U32, 1, 64, "warm pool: lanes booting for the pool at once"),
	K(network, CT_NETMODE, 0, 0, "network policy of a lane when not asked: internet, none or allow"),
	K(allow, CT_ALLOW, 0, 0, "hosts an allow lane reaches when it names none (\"*.npmjs.org\" patterns; repeatable)"),
	K(proxy_max_connections, CT_U32, 1, 4096, "allow lanes: proxied connections open at once per lane"),
	K(proxy_max_conn_bytes, CT_BYTES, 1024, 1ull << 44, "allow lanes: bytes through one proxied connection"),
	K(proxy_max_lane_bytes, CT_BYTES, 1024, 1ull << 50, "allow lanes: bytes through one lane's proxy in all"),
	K(proxy_idle_timeout_ms, CT_DURATION, 1000, 86400000, "allow lanes: a proxied connection with no traffic is closed"),
	K(proxy_head_timeout_ms, CT_DURATION, 1000, 3600000, "allow lanes: a request head must be whole this long after its connection opened"),
	K(proxy_max_heads, CT_U32, 1, 4096, "allow lanes: proxied connections still sending their request head, at once"),
	K(proxy_max_certs, CT_U32, 1, 4096, "lanes with secrets: leaf certificates one lane's CA keeps at once (one per host)"),
	K(proxy_events_per_min, CT_U32, 1, 100000, "allow lanes: proxy records per lane and minute (the rest are counted)"),
	K(proxy_connect_ports, CT_PORTS, 0, 0, "allow lanes: ports CONNECT may reach (\"443,8443\")"),
	K(proxy_http_ports, CT_PORTS, 0, 0, "allow lanes: ports plain-HTTP requests may reach (\"80\")"),
	K(secret, CT_SECRET, 0, 0, "NAME@HOST[,HOST...]: every create must bring variable NAME's value as a secret for these hosts (repeatable)"),
	/* Kept in secret's lines (lanesecret.h), after the hosts. */
	{ "secret_header", CT_SECRET_HEADER, offsetof(struct config, secret),
	    0, 0, "NAME=HEADER[,HEADER...]: headers secret NAME's value may go in besides the default credential ones (repeatable, up to 8 a name)" },
};

#undef K

const char *
config_home(void)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (home != NULL && home[0] == '/')
		return home;
	if ((pw = getpwuid(getuid())) == NULL || pw->pw_dir == NULL)
		fatalx("cannot determine the home directory (set HOME)");
	return pw->pw_dir;
}

char *
config_default_socket(void)
{
	const char *env = getenv(WIRE_SOCKET_ENV);
	char *path;

	if (env != NULL && env[0] != '\0')
		return xstrdup(env);
	xasprintf(&path, "%s/" WIRE_DEFAULT_SOCKET_REL, config_home());
	return path;
}

void
config_defaults(struct config *c)
{
	const char *env;

	memset(c, 0, sizeof *c);
	if ((env = getenv("AGENT_LANE_CONFIG")) != NULL && env[0] != '\0') {
		c->config_path = xstrdup(env);
		c->config_explicit = true;
	} else
		xasprintf(&c->config_path, "%s/.agent-lane/agent-laned.conf",
		    config_home());
	c->socket_path = config_default_socket();
	if ((env = getenv("AGENT_LANE_STATE_DIR")) != NULL && env[0] != '\0')
		c->state_dir = xstrdup(env);
	else
		xasprintf(&c->state_dir, "%s/.agent-lane", config_home());
	if ((env = getenv("AGENT_LANE_LIMACTL")) != NULL && env[0] != '\0')
		c->limactl = xstrdup(env);
	else
		c->limactl = xstrdup("limactl");
	/*
	 * Images only: template:default would bring the home-directory
	 * mount. The environment names another base the same way it names
	 * limactl (the real-Lima tests point lanes at a local guest image);
	 * it is checked like the configuration key.
	 */
	if ((env = getenv("AGENT_LANE_LIMA_TEMPLATE")) != NULL && env[0] != '\0')
		c->lima_template = xstrdup(env);
	else
		c->lima_template = xstrdup("template:_images/ubuntu-lts");

	c->max_lanes = 4;
	c->default_cpus = 2;
	c->max_cpus = 8;
	c->default_memory_mib = 4096;
	c->max_memory_mib = 16384;
	c->default_disk_gib = 30;
	c->max_disk_gib = 100;
	c->default_lifetime_ms = 60 * UNITS_MS_PER_MIN;
	c->max_lifetime_ms = 24 * 60 * UNITS_MS_PER_MIN;
	c->default_idle_timeout_ms = 0;
	c->max_exec_timeout_ms = 0;
	c->max_copy_out_bytes = 1ull << 30;
	c->max_frame_bytes = 1u << 20;
	c->max_connections = 256;
	c->max_execs_per_lane = 32;
	c->max_env_bytes = 256u * 1024;
	c->max_audit_events = 10000;
	c->max_log_bytes = 8ull << 20;
	c->max_lane_log_bytes = 1ull << 20;
	c->request_timeout_ms = 30 * UNITS_MS_PER_S;
	c->start_timeout_ms = 10 * UNITS_MS_PER_MIN;
	c->command_timeout_ms = 3 * UNITS_MS_PER_MIN;
	c->destroy_retry_max_ms = 5 * UNITS_MS_PER_MIN;
	c->retention_ms = 7 * 24 * 60 * UNITS_MS_PER_MIN;
	c->tick_ms = 30 * UNITS_MS_PER_S;
	c->pool_size = 0;
	c->pool_max_age_ms = 60 * UNITS_MS_PER_MIN;
	c->pool_max_boots = 2;
	c->max_images = 32;
	c->image_build_timeout_ms = 60 * UNITS_MS_PER_MIN;
	c->network = NETPOLICY_INTERNET;
	c->allow = xstrdup("");
	c->proxy_max_connections = 64;
	c->proxy_max_conn_bytes = 4ull << 30;
	c->proxy_max_lane_bytes = 64ull << 30;
	c->proxy_idle_timeout_ms = 5 * UNITS_MS_PER_MIN;
	c->proxy_head_timeout_ms = 10 * UNITS_MS_PER_S;
	c->proxy_max_heads = 16;
	c->proxy_max_certs = 64;
	c->proxy_events_per_min = 600;
	c->proxy_connect_ports = xstrdup("443");
	c->proxy_http_ports = xstrdup("80");
	c->secret = xstrdup("");
}

/* One allow line: patterns separated by commas or blanks, added. */
static int
config_add_allow(struct config *c, const char *value, char *err,
    size_t errlen)
{
	char buf[NETPOLICY_ALLOW_TEXT_MAX + 1], list[NETPOLICY_ALLOW_TEXT_MAX + 1];
	char *tok, *save = NULL;

	if (strlen(value) >= sizeof buf) {
		snprintf(err, errlen, "allow: value too long");
		return -1;
	}
	str_copy(buf, value, sizeof buf);
	str_copy(list, c->allow, sizeof list);
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL;
	    tok = strtok_r(NULL, ", \t", &save))
		if (!netpolicy_allow_add(list, sizeof list, tok, err, errlen))
			return -1;
	free(c->allow);
	c->allow = xstrdup(list);
	return 0;
}

/* Storage-unit suffixes users do not type: max_lifetime is max_lifetime_ms. */
static const char *const config_suffixes[] = { "_ms", "_mib", "_gib", "_path" };

/* Length of name without its storage suffix. */
static size_t
config_base_len(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof config_suffixes / sizeof *config_suffixes;
	    i++) {
		size_t sl = strlen(config_suffixes[i]);

		if (n > sl && strcmp(name + n - sl, config_suffixes[i]) == 0)
			return n - sl;
	}
	return n;
}

static const struct config_key *
config_find(const char *key)
{
	char norm[64];
	size_t i;

	if (strlen(key) >= sizeof norm)
		return NULL;
	for (i = 0; key[i] != '\0'; i++)
		norm[i] = key[i] == '-' ? '_' : key[i];
	norm[i] = '\0';
	for (i = 0; i < sizeof config_keys / sizeof *config_keys; i++) {
		const char *name = config_keys[i].name;
		size_t bl = config_base_len(name);

		/*
		 * Only the names users write: "max_lifetime_ms" would suggest
		 * milliseconds while a plain number there means seconds.
		 */
		if (strlen(norm) == bl && strncmp(norm, name, bl) == 0)
			return &config_keys[i];
	}
	return NULL;
}

bool
config_is_key(const char *key)
{
	return config_find(key) != NULL;
}

bool
config_is_flag(const char *key)
{
	const struct config_key *k = config_find(key);

	return k != NULL && k->type == CT_BOOL;
}

/* Name as users write it: without the storage-unit suffix. */
static void
config_user_name(const struct config_key *k, char *buf, size_t len)
{
	size_t bl = config_base_len(k->name);

	str_copy(buf, k->name, len);
	buf[bl < len ? bl : len - 1] = '\0';
}

const char *
config_nearest_flag(const char *key, const char *const *extra, size_t nextra,
    char *buf, size_t len)
{
	enum { NKEYS = sizeof config_keys / sizeof *config_keys };
	static char flags[NKEYS][64];
	const char *cands[NKEYS + 16];
	const char *near;
	size_t n = 0;

	for (size_t i = 0; i < NKEYS; i++) {
		config_user_name(&config_keys[i], flags[i], sizeof flags[i]);
		for (char *p = flags[i]; *p != '\0'; p++)
			if (*p == '_')
				*p = '-';
		cands[n++] = flags[i];
	}
	for (size_t i = 0; i < nextra && n < NKEYS + 16; i++)
		cands[n++] = extra[i];
	if ((near = nearest_word(key, cands, n)) == NULL)
		return NULL;
	str_copy(buf, near, len);
	return buf;
}

/*
 * One pool_shape line: "COUNT [cpus=N] [memory=SIZE] [disk=N] [image=NAME]";
 * what is left out is the default_* key's value when the pool starts (and
 * no image: the base template).
 */
static int
config_add_shape(struct config *c, const char *value, char *err, size_t errlen)
{
	struct pool_shape sh;
	char buf[256], *tok, *save = NULL, *eq;
	uint64_t v;

	memset(&sh, 0, sizeof sh);
	if (c->npool_shapes >= POOL_SHAPES_MAX) {
		snprintf(err, errlen, "pool_shape: at most %d lines",
		    POOL_SHAPES_MAX);
		return -1;
	}
	if (strlen(value) >= sizeof buf) {
		snprintf(err, errlen, "pool_shape: value too long");
		return -1;
	}
	str_copy(buf, value, sizeof buf);
	for (tok = strtok_r(buf, " \t", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t", &save)) {
		if ((eq = strchr(tok, '=')) == NULL) {
			if (tok != buf || units_parse_size(tok, &v) != 0 ||
			    tok[strspn(tok, "0123456789")] != '\0' || v < 1 ||
			    v > POOL_LANES_MAX)
				goto bad;
			sh.count = (uint32_t)v;
			continue;
		}
		*eq++ = '\0';
		if (strcmp(tok, "cpus") == 0) {
			if (units_parse_size(eq, &v) != 0 ||
			    eq[strspn(eq, "0123456789")] != '\0' || v < 1 ||
			    v > 256)
				goto bad;
			sh.cpus = (uint32_t)v;
		} else if (strcmp(tok, "memory") == 0) {
			/* As the memory keys: with its unit, whole MiB. */
			if (units_parse_size_unit(eq, UNITS_UNIT_REQUIRED,
			    &v) != 0)
				goto bad;
			if (v % (1u << 20) != 0 || (v >> 20) < 256 ||
			    (v >> 20) > (1u << 22))
				goto bad;
			sh.memory_mib = (uint32_t)(v >> 20);
		} else if (strcmp(tok, "image") == 0) {
			if (!names_image_valid(eq))
				goto bad;
			str_copy(sh.image, eq, sizeof sh.image);
		} else if (strcmp(tok, "disk") == 0) {
			/* As the disk keys: with its unit, whole GiB. */
			if (units_parse_size_unit(eq, UNITS_UNIT_REQUIRED,
			    &v) != 0 || v % (1u << 30) != 0)
				goto bad;
			v >>= 30;
			if (v < 1 || v > 65536)
				goto bad;
			sh.disk_gib = (uint32_t)v;
		} else
			goto bad;
	}
	if (sh.count == 0)
		goto bad;
	c->pool_shape[c->npool_shapes++] = sh;
	return 0;
bad:
	snprintf(err, errlen, "pool_shape: \"%s\" is not \"COUNT [cpus=N] "
	    "[memory=SIZE] [disk=SIZE] [image=NAME]\" (COUNT 1..%d; sizes "
	    "with their unit: memory=4G disk=30G)", value, POOL_LANES_MAX);
	return -1;
}

int
config_set(struct config *c, const char *key, const char *value, char *err,
    size_t errlen)
{
	const struct config_key *k = config_find(key);
	void *field;
	uint64_t v = 0;
	int rc = 0;

	if (k == NULL) {
		snprintf(err, errlen, "unknown key \"%s\"", key);
		return -1;
	}
	field = (char *)c + k->offset;
	switch (k->type) {
	case CT_SHAPE:
		return config_add_shape(c, value, err, errlen);
	case CT_ALLOW:
		return config_add_allow(c, value, err, errlen);
	case CT_SECRET:
		return lanesecret_config_add(&c->secret, value, err, errlen);
	case CT_SECRET_HEADER:
		return lanesecret_config_header(&c->secret, value, err, errlen);
	case CT_NETMODE: {
		enum netpolicy_mode m;

		if (!netpolicy_mode_parse(value, &m)) {
			snprintf(err, errlen, "%s: \"%s\" is not internet, none "
			    "or allow", key, value);
			return -1;
		}
		*(uint32_t *)field = (uint32_t)m;
		return 0;
	}
	case CT_PORTS: {
		uint16_t ports[PROXY_MAX_PORTS];
		size_t n;

		if (!proxy_parse_ports(value, ports, &n)) {
			snprintf(err, errlen, "%s: \"%s\" is not 1-%d ports "
			    "separated by commas", key, value, PROXY_MAX_PORTS);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		return 0;
	}
	case CT_STRING:
	case CT_PATH:
		if (value[0] == '\0') {
			snprintf(err, errlen, "%s: empty value", key);
			return -1;
		}
		if (k->type == CT_PATH && value[0] != '/') {
			snprintf(err, errlen, "%s: \"%s\" is not an absolute path",
			    key, value);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		return 0;
	case CT_BOOL:
		if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0 ||
		    strcmp(value, "1") == 0)
			*(bool *)field = true;
		else if (strcmp(value, "no") == 0 ||
		    strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*(bool *)field = false;
		else {
			snprintf(err, errlen, "%s: expected yes or no", key);
			return -1;
		}
		return 0;
	case CT_U32:
		rc = units_parse_size(value, &v);
		if (rc == 0 && value[strspn(value, "0123456789")] != '\0')
			rc = -1;
		break;
	case CT_MEMORY:
		if ((rc = units_parse_size_unit(value, UNITS_UNIT_REQUIRED,
		    &v)) == 0) {
			if (v % (1u << 20) != 0)
				rc = -1;
			v >>= 20;
		}
		break;
	case CT_GIB:
		if ((rc = units_parse_size_unit(value, UNITS_UNIT_REQUIRED,
		    &v)) == 0) {
			if (v % (1u << 30) != 0)
				rc = -1;
			v >>= 30;
		}
		break;
	case CT_DURATION:
		rc = units_parse_duration_ms(value, UNITS_UNIT_REQUIRED, &v);
		break;
	case CT_BYTES:
		/* Their names end in "bytes": a plain number is bytes. */
		rc = units_parse_size(value, &v);
		break;
	}
	if (rc == UNITS_NO_UNIT) {
		snprintf(err, errlen, "%s: \"%s\" needs its unit (%s%s or %s%s): "
		    "a plain number is taken only where the key's name says "
		    "the unit", key, value, value, k->type == CT_DURATION ? "s" :
		    "G", value, k->type == CT_DURATION ? "m" : "M");
		return -1;
	}
	if (rc != 0) {
		snprintf(err, errlen, "%s: invalid value \"%s\"", key, value);
		return -1;
	}
	if (v < k->min || v > k->max) {
		snprintf(err, errlen, "%s: \"%s\" is out of range", key, value);
		return -1;
	}
	switch (k->type) {
	case CT_U32:
	case CT_MEMORY:
	case CT_GIB:
		*(uint32_t *)field = (uint32_t)v;
		break;
	case CT_BYTES:
		if (k->max <= UINT32_MAX)
			*(uint32_t *)field = (uint32_t)v;
		else
			*(uint64_t *)field = v;
		break;
	default:
		*(uint64_t *)field = v;
		break;
	}
	return 0;
}

static char *
trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int
config_load_file(struct config *c, const char *path, bool required, char *err,
    size_t errlen)
{
	FILE *f;
	char line[1024], msg[256];
	int lineno = 0, rc = 0;

	if ((f = fopen(path, "re")) == NULL) {
		if (errno == ENOENT && !required)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		char *s, *eq, *key, *value;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -1;
			break;
		}
		if ((s = strchr(line, '#')) != NULL)
			*s = '\0';
		s = trim(line);
		if (*s == '\0')
			continue;
		if ((eq = strchr(s, '=')) == NULL) {
			snprintf(err, errlen, "%s:%d: expected key = value",
			    path, lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		key = trim(s);
		value = trim(eq + 1);
		if (config_set(c, key, value, msg, sizeof msg) == -1) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, msg);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		rc = -1;
	}
	fclose(f);
	return rc;
}

int
config_check_nofile(const struct config *c, unsigned long long nofile,
    char *err, size_t errlen)
{
	unsigned long long need = (unsigned long long)c->max_lanes * 2 *
	    c->proxy_max_connections + c->max_connections + CONFIG_FD_RESERVE;

	if (need <= nofile)
		return 0;
	snprintf(err, errlen, "max_lanes %u x 2 x proxy_max_connections %u + "
	    "max_connections %u + %d of the daemon's own = %llu descriptors, "
	    "but the open-file limit is %llu (ulimit -n; its hard limit, "
	    "which the daemon raises to, is the ceiling): lower those keys "
	    "or raise the limit", c->max_lanes, c->proxy_max_connections,
	    c->max_connections, CONFIG_FD_RESERVE, need, nofile);
	return -1;
}

int
config_finalize(struct config *c, char *err, size_t errlen)
{
	if (c->default_cpus > c->max_cpus) {
		snprintf(err, errlen, "default_cpus is above max_cpus");
		return -1;
	}
	if (c->default_memory_mib > c->max_memory_mib) {
		snprintf(err, errlen, "default_memory is above max_memory");
		return -1;
	}
	if (c->default_disk_gib > c->max_disk_gib) {
		snprintf(err, errlen, "default_disk is above max_disk");
		return -1;
	}
	if (c->default_lifetime_ms > c->max_lifetime_ms) {
		snprintf(err, errlen, "default_lifetime is above max_lifetime");
		return -1;
	}
	{
		uint32_t total = c->pool_size;

		for (uint32_t i = 0; i < c->npool_shapes; i++) {
			const struct pool_shape *sh = &c->pool_shape[i];

			total += sh->count;
			if (sh->cpus > c->max_cpus ||
			    sh->memory_mib > c->max_memory_mib ||
			    sh->disk_gib > c->max_disk_gib) {
				snprintf(err, errlen, "pool_shape %u is above "
				    "max_cpus, max_memory or max_disk", i + 1);
				return -1;
			}
		}
		if (total > POOL_LANES_MAX) {
			snprintf(err, errlen, "the warm pool holds %u lanes; "
			    "the most is %d", total, POOL_LANES_MAX);
			return -1;
		}
	}
	if (c->state_dir[0] != '/') {
		snprintf(err, errlen, "state_dir must be an absolute path");
		return -1;
	}
	free(c->lima_home);
	xasprintf(&c->lima_home, "%s/lima", c->state_dir);
	return 0;
}

/*
 * "NAME HOST HOST :HEADER" lines: NAME@HOST,HOST again (CT_SECRET), or
 * NAME=HEADER,HEADER for the lines with headers (CT_SECRET_HEADER).
 */
static void
config_print_secrets(const struct config *c, enum config_type t,
    const char *key, FILE *f)
{
	bool headers = t == CT_SECRET_HEADER;

	for (const char *p = c->secret; *p != '\0';) {
		size_t n = strcspn(p, "\n"), sp = strcspn(p, " "), k = 0;

		for (size_t j = sp; j < n; j++) {
			const char *tok = p + j + 1 + headers;

			if (p[j] != ' ' || (p[j + 1] == ':') != headers)
				continue;
			if (k++ == 0)
				fprintf(f, "%s = %.*s%c", key, (int)sp, p,
				    headers ? '=' : '@');
			else
				fputc(',', f);
			fprintf(f, "%.*s", (int)strcspn(tok, " \n"), tok);
		}
		if (k > 0)
			fputc('\n', f);
		p += n + (p[n] == '\n');
	}
}

void
config_print(const struct config *c, FILE *f)
{
	char name[64], dur[32];

	for (size_t i = 0; i < sizeof config_keys / sizeof *config_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const void *field = (const char *)c + k->offset;

		config_user_name(k, name, sizeof name);
		switch (k->type) {
		case CT_STRING:
		case CT_PATH:
		case CT_PORTS:
			fprintf(f, "%s = %s\n", name, *(char *const *)field);
			break;
		case CT_BOOL:
			fprintf(f, "%s = %s\n", name,
			    *(const bool *)field ? "yes" : "no");
			break;
		case CT_U32:
			fprintf(f, "%s = %u\n", name, *(const uint32_t *)field);
			break;
		case CT_MEMORY:
			fprintf(f, "%s = %uMiB\n", name, *(const uint32_t *)field);
			break;
		case CT_GIB:
			fprintf(f, "%s = %uGiB\n", name, *(const uint32_t *)field);
			break;
		case CT_BYTES:
			if (k->max <= UINT32_MAX)
				fprintf(f, "%s = %u\n", name,
				    *(const uint32_t *)field);
			else
				fprintf(f, "%s = %llu\n", name,
				    (unsigned long long)*(const uint64_t *)field);
			break;
		case CT_DURATION:
			units_format_duration(*(const uint64_t *)field, dur,
			    sizeof dur);
			fprintf(f, "%s = %s\n", name, dur);
			break;
		case CT_NETMODE:
			fprintf(f, "%s = %s\n", name, netpolicy_mode_name(
			    (enum netpolicy_mode)*(const uint32_t *)field));
			break;
		case CT_ALLOW:
			if (c->allow[0] != '\0') {
				fprintf(f, "%s = ", name);
				for (const char *p = c->allow; *p != '\0'; p++)
					fputc(*p == '\n' ? ' ' : *p, f);
				fputc('\n', f);
			}
			break;
		case CT_SECRET:
		case CT_SECRET_HEADER:
			config_print_secrets(c, k->type, name, f);
			break;
		case CT_SHAPE:
			for (uint32_t j = 0; j < c->npool_shapes; j++) {
				const struct pool_shape *sh = &c->pool_shape[j];

				fprintf(f, "%s = %u", name, sh->count);
				if (sh->cpus != 0)
					fprintf(f, " cpus=%u", sh->cpus);
				if (sh->memory_mib != 0)
					fprintf(f, " memory=%uMiB",
					    sh->memory_mib);
				if (sh->disk_gib != 0)
					fprintf(f, " disk=%uGiB", sh->disk_gib);
				fprintf(f, "\n");
			}
			break;
		}
	}
}

void
config_usage(FILE *f)
{
	char name[64];

	for (size_t i = 0; i < sizeof config_keys / sizeof *config_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char flag[64];

		config_user_name(k, name, sizeof name);
		for (size_t j = 0; j <= strlen(name); j++)
			flag[j] = name[j] == '_' ? '-' : name[j];
		if (k->type != CT_BOOL)
			strncat(flag, " VALUE", sizeof flag - strlen(flag) - 1);
		fprintf(f, "  --%-28s %s\n", flag, k->help);
	}
}

void
config_free(struct config *c)
{
	free(c->config_path);
	free(c->socket_path);
	free(c->state_dir);
	free(c->limactl);
	free(c->lima_home);
	free(c->lima_template);
	free(c->allow);
	free(c->proxy_connect_ports);
	free(c->proxy_http_ports);
	free(c->secret);
	memset(c, 0, sizeof *c);
}
