/*
 * Daemon configuration: built-in defaults, then the optional configuration
 * file, then command-line flags. Every key of the file is also a flag
 * (--max-lanes 4 is max_lanes = 4); docs/agent-laned.conf.example lists them.
 */
#ifndef LANED_CONFIG_H
#define LANED_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "names.h"

#define POOL_SHAPES_MAX 8	/* pool_shape lines */
#define POOL_LANES_MAX 64	/* pool lanes of all shapes together */

/*
 * A warm-pool shape: count lanes of it are kept booted (daemon/pool.c,
 * which compares shapes in one place, pool_shape_eq).
 */
struct pool_shape {
	uint32_t count;
	uint32_t cpus, memory_mib, disk_gib;	/* 0: the default_* key */
	char image[NAMES_IMAGE_SIZE];	/* "": the base template */
	/*
	 * The network policy, which the configuration does not set per
	 * shape: the pool fills it in (pool.c) from the network keys.
	 */
	bool net_policy;
	uint32_t net_mode;		/* enum netpolicy_mode */
	bool sudo;
};

struct config {
	char *config_path;
	bool config_explicit;	/* named by $AGENT_LANE_CONFIG or --config */
	char *socket_path;
	char *state_dir;
	char *limactl;
	char *lima_home;	/* derived: <state_dir>/lima */
	char *lima_template;	/* base of every lane's YAML */

	uint32_t max_lanes;
	uint32_t default_cpus, max_cpus;
	uint32_t default_memory_mib, max_memory_mib;
	uint32_t default_disk_gib, max_disk_gib;
	uint64_t default_lifetime_ms, max_lifetime_ms;
	uint64_t default_idle_timeout_ms;	/* 0: lanes have no idle timeout */
	uint64_t max_exec_timeout_ms;		/* 0: only the lane deadline */
	uint64_t max_copy_out_bytes;
	uint32_t max_frame_bytes;
	uint32_t max_connections;
	uint32_t max_execs_per_lane;
	uint32_t max_env_bytes;
	uint32_t max_audit_events;	/* per lane: exec and copy events kept */
	uint64_t max_log_bytes;		/* agent-laned.log and .log.1 together */
	uint64_t max_lane_log_bytes;	/* per Lima log file kept or sent */
	bool log_file_only;		/* no stderr copy once the file is open */
	uint64_t request_timeout_ms;	/* hello + request must arrive within */
	uint64_t start_timeout_ms;	/* limactl start */
	uint64_t command_timeout_ms;	/* every other limactl call */
	uint64_t destroy_retry_max_ms;	/* backoff ceiling for limactl delete */
	uint64_t retention_ms;		/* ended lanes stay in the registry */
	uint64_t tick_ms;		/* wall-clock re-check (sleep/wake) */
	uint32_t max_images;		/* image rows, builds included */
	uint64_t image_build_timeout_ms;	/* one image build, end to end */
	bool debug;

	/* The warm pool (daemon/pool.c); off while every count is 0. */
	uint32_t pool_size;		/* lanes of the default shape */
	struct pool_shape pool_shape[POOL_SHAPES_MAX];	/* pool_shape lines */
	uint32_t npool_shapes;
	uint64_t pool_max_age_ms;	/* a pooled lane is recycled past it */
	uint32_t pool_max_boots;	/* concurrent pool boots at most */

	/* Lane network policy (daemon/netpolicy.h, daemon/lanenet.c). */
	uint32_t network;		/* enum netpolicy_mode of a lane */
	char *allow;			/* default allow list, '\n'-separated */
	uint32_t proxy_max_connections;	/* per allow lane, open at once */
	uint64_t proxy_max_conn_bytes;	/* one proxied connection */
	uint64_t proxy_max_lane_bytes;	/* everything one lane's proxy carries */
	uint64_t proxy_idle_timeout_ms;	/* no byte either way */
	uint64_t proxy_head_timeout_ms;	/* accept to a whole request head */
	uint32_t proxy_max_heads;	/* connections still sending a head */
	uint32_t proxy_max_certs;	/* leaves a lane CA caches (tlsca_new) */
	uint32_t proxy_events_per_min;	/* proxy records per lane; the rest counted */
	char *proxy_connect_ports;	/* "443": CONNECT targets allowed */
	char *proxy_http_ports;		/* "80": absolute-URI http targets */

	/*
	 * Secrets every create must bring (lanesecret.h): "NAME HOST..."
	 * lines. Names and hosts only: the daemon never has a value but a
	 * client's, held in memory for that lane's life.
	 */
	char *secret;
};

/*
 * Descriptors the daemon keeps for itself (registry, log, listeners, each
 * lane proxy's listener) on top of what config_check_nofile counts.
 */
#define CONFIG_FD_RESERVE 64

/*
 * Whether the configuration's descriptors fit nofile (the soft limit after
 * compat_nofile_raise): every lane's proxy at its cap, two descriptors a
 * proxied connection, every client connection, and CONFIG_FD_RESERVE.
 * -1 with err naming the keys when they cannot.
 */
int config_check_nofile(const struct config *, unsigned long long nofile,
    char *err, size_t errlen);

/* Fills built-in defaults and the per-user default paths. */
void config_defaults(struct config *);
/*
 * Applies one key. Keys use underscores; dashes are accepted too so that
 * flags map directly. Returns 0, or -1 with a message in err.
 */
int config_set(struct config *, const char *key, const char *value,
    char *err, size_t errlen);
/* Applies a file; a missing file is fine unless required. */
int config_load_file(struct config *, const char *path, bool required,
    char *err, size_t errlen);
/* Checks relations between keys and derives lima_home. */
int config_finalize(struct config *, char *err, size_t errlen);
/* Writes the effective configuration in file syntax. */
void config_print(const struct config *, FILE *);
/* Flag help lines for --help. */
void config_usage(FILE *);
bool config_is_key(const char *key);
/*
 * The flag (without "--") nearest a mistyped key, among the keys' flags
 * and the extra ones the caller has (--check-config...), copied into buf;
 * NULL if none is near.
 */
const char *config_nearest_flag(const char *key, const char *const *extra,
    size_t nextra, char *buf, size_t len);
/* A yes/no key, usable as a bare --flag. */
bool config_is_flag(const char *key);
void config_free(struct config *);

/* $HOME or the password database; fatal when neither has it. */
const char *config_home(void);
/* The socket path a client uses when nothing is configured. */
char *config_default_socket(void);

#endif
