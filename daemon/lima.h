/*
 * The Lima driver: the only module that knows limactl's command line, the
 * lane YAML, the layout of the Lima home and the `list --json` format.
 *
 * Lane names are made here and nowhere else ("al-" + 16 lowercase hex digits
 * from the OS random source; their shape is names.h's), and every argv
 * builder re-validates the name it is given, so a client string can never
 * reach limactl as an instance name.
 */
#ifndef LANED_LIMA_H
#define LANED_LIMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lima_lane_spec {
	uint32_t cpus;
	uint32_t memory_mib;
	uint32_t disk_gib;
	/*
	 * The network policy (netpolicy.h): its provision script and, unless
	 * sudo is kept, user.passwordlessSudo: false with the Lima version
	 * that honours it. has_policy false renders neither.
	 */
	bool has_policy;
	int net_mode;			/* enum netpolicy_mode */
	uint16_t proxy_port;		/* allow; internet with secrets */
	bool sudo;
	/*
	 * A lane with secrets and a proxy: its CA's certificate (PEM), put
	 * into the guest's system trust store at every boot. Needs a policy.
	 */
	const char *ca_pem;
	/* Keep unprivileged user namespaces: the lane has rootless Docker. */
	bool userns;
};

struct lima_instance {
	char name[80];
	char status[16];	/* "Running", "Stopped", "Broken", ... */
};

struct lima;

/*
 * Finds limactl: a path is made absolute; a bare name is searched in PATH,
 * then in Homebrew's /opt/homebrew/bin and /usr/local/bin (a launchd job's
 * PATH has neither). 0, or -1 when nothing executable was found.
 */
int lima_resolve_limactl(const char *spec, char *out, size_t len);

/* limactl is resolved to an absolute path; home is the dedicated LIMA_HOME. */
struct lima *lima_new(const char *limactl, const char *home,
    const char *base_template, char *const *environ_base);
void lima_free(struct lima *);
const char *lima_limactl(const struct lima *);
const char *lima_home(const struct lima *);
/* The environment every limactl child gets: ours with LIMA_HOME replaced. */
char *const *lima_envp(const struct lima *);

/* Fills name (NAMES_LANE_LEN + 1 bytes) from the OS random source. */
int lima_name_generate(char *name, size_t size);
/* Image instance names: the same random source, the "ali-" prefix. */
int lima_image_name_generate(char *name, size_t size);

/*
 * Checks that a base template cannot bring host surface: only Lima's image
 * templates (template:_images/NAME) or an absolute path are allowed.
 */
bool lima_template_acceptable(const char *tmpl);

/* Renders the lane YAML; returns bytes written or -1 if buf is too small. */
int lima_yaml_render(const struct lima *, const struct lima_lane_spec *,
    char *buf, size_t len);

/*
 * Refuses a Lima home whose _config holds default.yaml, override.yaml or
 * base.yaml: Lima merges them into every instance and they could re-open
 * mounts or agent forwarding. Returns true (with why) when unsafe.
 */
bool lima_home_unsafe(const struct lima *, char *why, size_t len);
/*
 * Replaces an instance's lima.yaml (temporary file, fsync, rename; no
 * symbolic link followed). A clone gets the lane template this way: the
 * image's own YAML is never trusted.
 */
int lima_yaml_replace(const struct lima *, const char *name, const char *yaml,
    size_t len, char *err, size_t errlen);
/* Path of the lane's instance directory; false if the name is invalid. */
bool lima_instance_dir(const struct lima *, const char *name, char *buf,
    size_t len);
bool lima_instance_exists(const struct lima *, const char *name);
/*
 * Calls cb for each directory in the Lima home with a lane-shaped name.
 * Anything else in the home is never reported, so never touched.
 */
int lima_scan_lanes(const struct lima *,
    void (*cb)(const char *name, void *arg), void *arg);
/* The same for image-shaped names ("ali-" + 16 hex). */
int lima_scan_images(const struct lima *,
    void (*cb)(const char *name, void *arg), void *arg);

/*
 * argv builders. Each returns a NULL-terminated vector owned by the caller
 * (lima_argv_free), or NULL when the name does not validate.
 */
char **lima_argv_create(const struct lima *, const char *name,
    const char *yaml_path);
char **lima_argv_start(const struct lima *, const char *name,
    uint64_t timeout_ms);
char **lima_argv_delete(const struct lima *, const char *name);
/* Graceful stop (an image is stopped before it can be cloned). */
char **lima_argv_stop(const struct lima *, const char *name);
/*
 * `limactl clone FROM TO`: from an image (to a lane or an image), or from
 * a stopped lane to an image (agent-lanectl commit); never to a lane from
 * a lane.
 */
char **lima_argv_clone(const struct lima *, const char *image,
    const char *to);
/*
 * `limactl template copy --embed-all PATH -`: the template at PATH (an
 * absolute file of ours) with its base: templates merged in, on stdout.
 * Lima embeds them itself at create; an instance's lima.yaml that still
 * names a base fails validation when it starts ("field `base` must be
 * empty"), so a clone's replaced YAML is embedded this way first.
 */
char **lima_argv_template_embed(const struct lima *, const char *path);
/* The most an embedded lane template may be: beyond it, refused. */
#define LIMA_EMBED_MAX (256 * 1024)
char **lima_argv_list(const struct lima *);
char **lima_argv_version(const struct lima *);
char **lima_argv_info(const struct lima *);
/*
 * From `limactl info` JSON: whether the driver says its guests have no
 * network ("guestNetwork": "none", which only the test simulator prints).
 * 0, or -1 with err when the output is not a JSON object.
 */
int lima_info_guest_network_none(struct lima *, const char *buf, size_t len,
    bool *none, char *err, size_t errlen);
/*
 * From the same JSON: the VM type lanes get, the default template's
 * vmType (Lima 2) or else the first of vmTypes, as printable ASCII; ""
 * when neither is there.
 */
void lima_info_driver(struct lima *, const char *buf, size_t len,
    char *driver, size_t driverlen);
/* The host port of the instance's ssh forward, from its ssh.config. */
int lima_ssh_port(const struct lima *, const char *name, uint16_t *port);
char **lima_argv_shell(const struct lima *, const char *name,
    const char *const *cmd);
void lima_argv_free(char **);

/*
 * Parses `limactl list --json` output (one JSON object per line) with
 * SQLite's JSON functions. Lines that are not JSON objects with a string
 * "name" are an error; at most max instances. 0 or -1 with err.
 */
int lima_list_parse(struct lima *, const char *buf, size_t len,
    struct lima_instance **out, size_t *n, size_t max, char *err,
    size_t errlen);

/*
 * Extracts the most useful message from limactl's stderr, whether logrus
 * JSON lines (--log-format=json) or text: the last fatal/error "msg", else
 * the last non-empty line. Sanitized to printable ASCII.
 */
/*
 * One line limactl wrote to stderr with --log-format=json: its level and
 * msg (sanitized), true; false for any other line.
 */
bool lima_log_line(struct lima *, const char *line, size_t len, char *level,
    size_t levellen, char *msg, size_t msglen);
/*
 * A hostagent "Waiting for the essential requirement 1 of 2: `ssh`" said
 * for people: "booting (about a minute without KVM), step 1 of 2";
 * any other text as it is.
 */
void lima_requirement_text(const char *msg, char *buf, size_t len);
void lima_error_message(struct lima *, const char *stderr_text, char *buf,
    size_t len);

#endif
