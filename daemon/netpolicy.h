/*
 * A lane's network policy, as the guest enforces it: an nftables rule set
 * loaded by a system provision script at every boot, and no guest root
 * (Lima's user.passwordlessSudo: false) so that the agent cannot unload it.
 *
 *   internet  the internet, but nothing on the host (192.168.5.2 is the
 *             host's loopback) except DNS at 192.168.5.3, and no private,
 *             CGNAT or link-local range;
 *   none      loopback only, no DNS;
 *   allow     nothing directly but the lane's proxy port on 192.168.5.2
 *             (daemon/proxy.c), which allows listed names only.
 * Every mode accepts established traffic first: forwarded ssh arrives in
 * the guest from 192.168.5.2, and dropping sshd's replies loses the lane.
 */
#ifndef LANED_NETPOLICY_H
#define LANED_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum netpolicy_mode {
	NETPOLICY_INTERNET,
	NETPOLICY_NONE,
	NETPOLICY_ALLOW,
};

/* Lima 2.2.0 is the first with user.passwordlessSudo: false (plain mode). */
#define NETPOLICY_LIMA_MIN "2.2.0"
/* The nftables table every rule lives in. */
#define NETPOLICY_TABLE "agentlane"
/* Written by the provision script once the rules are in; read by the check. */
#define NETPOLICY_STAMP "/run/agent-lane/netpolicy"

/*
 * Allow lists travel and are stored as normalised patterns (hostrule.h:
 * a host name or "*." and a name of two labels or more), one per line.
 */
#define NETPOLICY_ALLOW_MAX 32		/* patterns per lane */
#define NETPOLICY_ALLOW_TEXT_MAX 2048	/* the list's text, separators in */

bool netpolicy_mode_parse(const char *, enum netpolicy_mode *);
const char *netpolicy_mode_name(enum netpolicy_mode);

/*
 * The nft script for a mode; proxy_port is the lane's proxy on the host:
 * an allow lane's only way out (it must be non-zero), an internet lane's
 * with secrets (0: none). Returns the length, or -1 if buf is too small.
 */
int netpolicy_ruleset(enum netpolicy_mode, uint16_t proxy_port, char *buf,
    size_t len);

/*
 * The lane YAML keys of a policy: `user.passwordlessSudo: false` unless
 * sudo is kept, and the system provision script that loads the rule set,
 * turns user namespaces off unless userns is kept (lanes with Docker,
 * whose rootless daemon needs them), and writes NETPOLICY_STAMP last.
 * Returns the length, or -1.
 */
int netpolicy_yaml(enum netpolicy_mode, uint16_t proxy_port, bool sudo,
    bool userns, char *buf, size_t len);

/*
 * The check the daemon runs in the guest, as the lane user, before it
 * reports a policy lane ready: the provision script's stamp names this
 * mode as enforced, the user has no passwordless sudo (unless kept), and a
 * TCP connection to 192.168.5.2:probe_port (the lane's own ssh port on the
 * host) is dropped, neither made nor refused, and with ca_pem that the
 * system bundle holds the lane CA. Prints "ok MODE" and exits 0,
 * or prints "fail: WHY" and exits 1. A guest with no network at all (the
 * simulator) has no stamp and fails: nothing here passes by default.
 */
int netpolicy_check_script(enum netpolicy_mode, bool sudo, uint16_t probe_port,
    const char *ca_pem, char *buf, size_t len);

/*
 * The lane CA of a lane with secrets, in the guest: its certificate goes
 * to NETPOLICY_CA_FILE and into the system bundle (update-ca-certificates)
 * by a system provision script, as root at every boot (the lane user has
 * no root). netpolicy_ca_yaml renders that script as one more item of the
 * `provision:` list netpolicy_yaml opens; -1 if pem is not a plain PEM
 * certificate or buf is too small. With ca_pem, netpolicy_check_script
 * also checks that the bundle holds it before the lane is ready.
 */
#define NETPOLICY_CA_DIR "/usr/local/share/ca-certificates"
#define NETPOLICY_CA_FILE NETPOLICY_CA_DIR "/agent-lane.crt"
#define NETPOLICY_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
int netpolicy_ca_yaml(const char *pem, char *buf, size_t len);

/*
 * `limactl --version` output ("limactl version 2.2.0"): whether it is at
 * least NETPOLICY_LIMA_MIN. False with why set when older or unreadable.
 */
bool netpolicy_lima_version_ok(const char *out, char *why, size_t whylen);

/*
 * The exec environment of a lane with a proxy (allow lanes; internet
 * lanes with secrets): HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their
 * lower-case forms, as NAME=VALUE strings into env[8]. Returns the count;
 * none for mode none or port 0.
 */
size_t netpolicy_proxy_env(enum netpolicy_mode, uint16_t proxy_port,
    char env[8][64]);

/*
 * Appends one pattern to the '\n'-separated list text (cap bytes with
 * its NUL), normalised; a duplicate is dropped. False with why set for a
 * pattern that can never work (hostrule_check: not a name, an address, a
 * loopback name), more than NETPOLICY_ALLOW_MAX, or a list over cap.
 */
bool netpolicy_allow_add(char *text, size_t cap, const char *pattern,
    char *why, size_t whylen);
/* Patterns in a list text. */
size_t netpolicy_allow_count(const char *text);

#endif
