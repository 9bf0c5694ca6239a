/*
 * The guest side of a lane's network policy (see netpolicy.h): the
 * nftables rule set per mode, the provision script and YAML keys that load
 * it at every boot, the Lima version it needs, and the proxy environment
 * of `allow` lanes.
 *
 * The rule set is the one measured on a real guest (real-vm-notes.md,
 * "Lima's network"): an inet table whose output chain accepts
 * established/related first, so that sshd's replies to the forwarded
 * connection (which comes from 192.168.5.2) still leave.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostrule.h"
#include "netpolicy.h"
#include "util.h"

static const char *const mode_names[] = {
	[NETPOLICY_INTERNET] = "internet",
	[NETPOLICY_NONE] = "none",
	[NETPOLICY_ALLOW] = "allow",
};

bool
netpolicy_mode_parse(const char *s, enum netpolicy_mode *m)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*m = (enum netpolicy_mode)i;
			return true;
		}
	return false;
}

const char *
netpolicy_mode_name(enum netpolicy_mode m)
{
	return (size_t)m < sizeof(mode_names) / sizeof(mode_names[0]) ?
	    mode_names[m] : "?";
}

/*
 * Shared head of every chain. DHCP renewals go to the user-mode network's
 * own server on 192.168.5.2:67 (slirp and gvisor answer it themselves; it
 * is not a host port); without them the lease ends under a long lane.
 *
 * sshd's side of the forwarded ssh connection, which arrives from
 * 192.168.5.2, is accepted by its source port too, not only as
 * established: the rules load at boot while Lima's ssh sessions are open,
 * and conntrack, which they switch on, picks such a connection up
 * mid-stream. If the guest's packet is the first it sees (sshd answering
 * a command that was already running), it is "new", and without this rule
 * it and every retransmission of it would be dropped: on real Lima 2.2 the
 * hostagent's readiness probe hung so (tests/regress/netpolicy.py holds
 * it). Only root can bind port 22, and sshd holds it.
 */
#define CHAIN_HEAD(policy) \
	"table inet " NETPOLICY_TABLE "\n" \
	"delete table inet " NETPOLICY_TABLE "\n" \
	"table inet " NETPOLICY_TABLE " {\n" \
	"\tchain output {\n" \
	"\t\ttype filter hook output priority 0; policy " policy ";\n" \
	"\t\tct state established,related accept\n" \
	"\t\tip daddr 192.168.5.2 tcp sport 22 accept\n" \
	"\t\toif \"lo\" accept\n" \
	"\t\tip daddr 192.168.5.2 udp sport 68 udp dport 67 accept\n"

int
netpolicy_ruleset(enum netpolicy_mode m, uint16_t proxy_port, char *buf,
    size_t len)
{
	int n = -1;

	char proxy[64] = "";

	switch (m) {
	case NETPOLICY_INTERNET:
		/*
		 * 192.168.5.2 (host loopback) and .3 fall in 192.168/16;
		 * 100.64/10 carries VPNs such as Tailscale; fec0::/10 is
		 * slirp's IPv6 prefix, where fec0::2 is the host. A lane with
		 * secrets has a proxy: its one port on the host is let through.
		 */
		if (proxy_port != 0)
			snprintf(proxy, sizeof proxy, "\t\tip daddr 192.168.5.2 "
			    "tcp dport %u accept\n", (unsigned)proxy_port);
		n = snprintf(buf, len, CHAIN_HEAD("accept")
		    "\t\tip daddr 192.168.5.3 udp dport 53 accept\n"
		    "\t\tip daddr 192.168.5.3 tcp dport 53 accept\n"
		    "%s"
		    "\t\tip daddr { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, "
		    "127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, "
		    "192.168.0.0/16, 224.0.0.0/4, 240.0.0.0/4 } drop\n"
		    "\t\tip6 daddr { ::/127, ::ffff:0:0/96, fc00::/7, "
		    "fe80::/10, fec0::/10, ff00::/8 } drop\n"
		    "\t}\n"
		    "}\n", proxy);
		break;
	case NETPOLICY_NONE:
		n = snprintf(buf, len, CHAIN_HEAD("drop") "\t}\n}\n");
		break;
	case NETPOLICY_ALLOW:
		if (proxy_port == 0)
			return -1;
		n = snprintf(buf, len, CHAIN_HEAD("drop")
		    "\t\tip daddr 192.168.5.2 tcp dport %u accept\n"
		    "\t}\n"
		    "}\n", (unsigned)proxy_port);
		break;
	}
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n;
}

/* Indents each line of text by ind into buf at *off. */
static bool
indent_into(char *buf, size_t len, size_t *off, const char *ind,
    const char *text)
{
	while (*text != '\0') {
		const char *nl = strchr(text, '\n');
		size_t ln = nl ? (size_t)(nl - text) + 1 : strlen(text);
		int n = snprintf(buf + *off, len - *off, "%s%.*s", ind, (int)ln,
		    text);
		if (n < 0 || (size_t)n >= len - *off)
			return false;
		*off += (size_t)n;
		text += ln;
	}
	return true;
}

/*
 * Guest root, taken away. Lima 2.2's `user.passwordlessSudo: false` does
 * not remove sudo: cloud-init still writes "USER ALL=(ALL) ALL", and
 * Lima's boot script then gives the user a random password in ~/password,
 * which the user can read and hand to sudo. So every boot (cloud-init
 * writes the rule again for a new instance, a clone included) the policy
 * script removes every rule that names the lane user and the user from
 * the groups Debian and others grant sudo to, and fails, leaving no
 * stamp, if a rule for the user is still there. Lima expands {{.User}}
 * (a Go template) to the guest user's name before the script reaches the
 * guest; its LIMA_CIDATA_* variables are not for provision scripts.
 */
static const char netpolicy_nosudo_script[] =
    "u='{{.User}}'\n"
    "rm -f /etc/sudoers.d/90-cloud-init-users\n"
    "for g in sudo wheel admin; do\n"
    "\tif id -nG \"$u\" 2>/dev/null | tr ' ' '\\n' | grep -qx \"$g\"; then\n"
    "\t\tgpasswd -d \"$u\" \"$g\" >/dev/null; fi\n"
    "done\n"
    "if grep -rhsw -e \"$u\" /etc/sudoers /etc/sudoers.d | "
    "grep -qv '^[[:space:]]*#'; then\n"
    "\techo \"agent-lane: a sudo rule still names $u\" >&2; exit 1; fi\n";

/*
 * Unprivileged user namespaces give the lane user a root of its own, and
 * with it nf_tables, the rules' own code, and much other kernel code that
 * only root could reach (`unshare -Urn nft ...`): the usual first step of
 * a guest kernel exploit, and the policy holds only while the guest kernel
 * does. None for the lane; rootless Docker needs them (SECURITY.md).
 * Debian's kernels also have kernel.unprivileged_userns_clone.
 */
#define NO_USERNS \
	"# No user namespaces: they open root-only kernel code to the user.\n" \
	"echo 0 > /proc/sys/user/max_user_namespaces\n" \
	"if [ -e /proc/sys/kernel/unprivileged_userns_clone ]; then\n" \
	"\techo 0 > /proc/sys/kernel/unprivileged_userns_clone\n" \
	"fi\n"

int
netpolicy_yaml(enum netpolicy_mode m, uint16_t proxy_port, bool sudo,
    bool userns, char *buf, size_t len)
{
	char rules[2048], script[3072];
	size_t off = 0;
	int n;

	if (netpolicy_ruleset(m, proxy_port, rules, sizeof rules) < 0)
		return -1;
	/*
	 * `set -e`: a rule set that does not load leaves no stamp, and the
	 * daemon's check then refuses the lane. The stamp is root's, in
	 * /run (gone at shutdown), written last.
	 */
	n = snprintf(script, sizeof script,
	    "#!/bin/sh\n"
	    "# agent-lane network policy: %s. Runs as root at every boot.\n"
	    "set -eu\n"
	    "rm -f " NETPOLICY_STAMP "\n"
	    "%s"
	    "nft -f - <<'AGENT_LANE_NFT'\n"
	    "%s"
	    "AGENT_LANE_NFT\n"
	    "%s"
	    "mkdir -p /run/agent-lane\n"
	    "echo '%s %s' > " NETPOLICY_STAMP ".tmp\n"
	    "mv -f " NETPOLICY_STAMP ".tmp " NETPOLICY_STAMP "\n",
	    netpolicy_mode_name(m), sudo ? "" : netpolicy_nosudo_script,
	    rules,
	    userns ? "# User namespaces are kept: the lane has Docker.\n" :
	    NO_USERNS, netpolicy_mode_name(m), sudo ? "advisory" : "enforced");
	if (n < 0 || (size_t)n >= sizeof script)
		return -1;
	if (!sudo) {
		n = snprintf(buf, len, "user:\n  passwordlessSudo: false\n");
		if (n < 0 || (size_t)n >= len)
			return -1;
		off = (size_t)n;
	}
	n = snprintf(buf + off, len - off,
	    "provision:\n- mode: system\n  script: |\n");
	if (n < 0 || (size_t)n >= len - off)
		return -1;
	off += (size_t)n;
	if (!indent_into(buf, len, &off, "    ", script))
		return -1;
	return (int)off;
}

/* A PEM certificate as OpenSSL writes it: nothing a shell would read. */
static bool
pem_plain(const char *pem)
{
	return strncmp(pem, "-----BEGIN CERTIFICATE-----\n", 28) == 0 &&
	    strspn(pem, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789+/=- \n") == strlen(pem) && pem[strlen(pem) - 1] == '\n';
}

int
netpolicy_ca_yaml(const char *pem, char *buf, size_t len)
{
	char script[8192];
	size_t off = 0;
	int n;

	if (!pem_plain(pem))
		return -1;
	/*
	 * One PEM per file, named *.crt, where update-ca-certificates looks;
	 * it rebuilds the bundle that SSL_CERT_FILE and friends name. Its
	 * own output goes to the boot log; set -e: no half-installed CA.
	 */
	n = snprintf(script, sizeof script,
	    "#!/bin/sh\n"
	    "# agent-lane: the lane CA (secrets). Runs as root at every boot.\n"
	    "set -eu\n"
	    "mkdir -p " NETPOLICY_CA_DIR "\n"
	    "cat > " NETPOLICY_CA_FILE ".tmp <<'AGENT_LANE_CA'\n"
	    "%s"
	    "AGENT_LANE_CA\n"
	    "chmod 0644 " NETPOLICY_CA_FILE ".tmp\n"
	    "mv -f " NETPOLICY_CA_FILE ".tmp " NETPOLICY_CA_FILE "\n"
	    "update-ca-certificates\n", pem);
	if (n < 0 || (size_t)n >= sizeof script)
		return -1;
	n = snprintf(buf, len, "- mode: system\n  script: |\n");
	if (n < 0 || (size_t)n >= len)
		return -1;
	off = (size_t)n;
	if (!indent_into(buf, len, &off, "    ", script))
		return -1;
	return (int)off;
}

/*
 * The check's lines for the CA: the bundle holds its certificate (a line
 * of its base64 long enough to be its own; PEM lines are 64 characters).
 */
static int
ca_check(const char *pem, char *buf, size_t len)
{
	const char *line;
	size_t n;
	int w;

	buf[0] = '\0';
	if (pem == NULL)
		return 0;
	if (!pem_plain(pem) || (line = strchr(pem, '\n')) == NULL)
		return -1;
	line++;
	if ((n = strcspn(line, "\n")) < 32)
		return -1;
	w = snprintf(buf, len,
	    "grep -qxF '%.*s' " NETPOLICY_CA_BUNDLE " 2>/dev/null || {\n"
	    "\techo 'fail: the lane CA is not in " NETPOLICY_CA_BUNDLE "'; "
	    "exit 1; }\n", (int)n, line);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

int
netpolicy_check_script(enum netpolicy_mode m, bool sudo, uint16_t probe_port,
    const char *ca_pem, char *buf, size_t len)
{
	const char *mode = netpolicy_mode_name(m);
	char ca[256];
	int n;

	if (probe_port == 0 || ca_check(ca_pem, ca, sizeof ca) == -1)
		return -1;
	/*
	 * The probe is perl (the guest helper needs it anyway): connected
	 * or refused means the host answered; a drop shows as a timeout or
	 * EPERM, and a guest without a route as ENETUNREACH.
	 */
	n = snprintf(buf, len,
	    "#!/bin/sh\n"
	    "stamp=$(cat " NETPOLICY_STAMP " 2>/dev/null) || {\n"
	    "\techo 'fail: no policy stamp: the rules were not loaded'; exit 1; }\n"
	    "[ \"$stamp\" = '%s %s' ] || {\n"
	    "\techo \"fail: the stamp says '$stamp', not '%s %s'\"; exit 1; }\n"
	    "%s"
	    "r=$(perl -MSocket -e '\n"
	    "socket(S, PF_INET, SOCK_STREAM, 0) or die \"socket: $!\\n\";\n"
	    "$SIG{ALRM} = sub { print \"blocked\\n\"; exit 0 };\n"
	    "alarm 3;\n"
	    "if (connect(S, pack_sockaddr_in(%u, inet_aton(\"192.168.5.2\")))) "
	    "{ print \"reachable\\n\"; exit 0 }\n"
	    "print $!{ECONNREFUSED} ? \"reachable\\n\" : \"blocked\\n\";')\n"
	    "[ \"$r\" = blocked ] || {\n"
	    "\techo \"fail: 192.168.5.2:%u answered the guest ($r)\"; exit 1; }\n"
	    "%s"
	    "echo 'ok %s'\n",
	    mode, sudo ? "advisory" : "enforced",
	    mode, sudo ? "advisory" : "enforced",
	    sudo ? "" :
	    "if sudo -n true >/dev/null 2>&1; then\n"
	    "\techo 'fail: the guest user has passwordless sudo'; exit 1; fi\n"
	    "if [ -r \"$HOME/password\" ] && sudo -S -k -p '' true "
	    "<\"$HOME/password\" >/dev/null 2>&1; then\n"
	    "\techo 'fail: the password Lima gave the guest user "
	    "(~/password) opens sudo'; exit 1; fi\n",
	    (unsigned)probe_port, (unsigned)probe_port, ca, mode);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n;
}

bool
netpolicy_lima_version_ok(const char *out, char *why, size_t whylen)
{
	static const char prefix[] = "limactl version ";
	unsigned maj, min, pat;
	char v[32];

	if (out == NULL || strncmp(out, prefix, sizeof(prefix) - 1) != 0 ||
	    sscanf(out + sizeof(prefix) - 1, "%u.%u.%u", &maj, &min, &pat) != 3) {
		snprintf(why, whylen, "cannot read the Lima version from "
		    "`limactl --version`; network policies need Lima "
		    NETPOLICY_LIMA_MIN " or later");
		return false;
	}
	if (maj > 2 || (maj == 2 && min >= 2))
		return true;
	snprintf(v, sizeof v, "%u.%u.%u", maj, min, pat);
	snprintf(why, whylen, "Lima %s cannot drop guest root "
	    "(user.passwordlessSudo: false needs Lima " NETPOLICY_LIMA_MIN
	    " or later), so a network policy could be undone from inside the "
	    "lane; upgrade Lima, or create the lane with --sudo for an "
	    "advisory policy", v);
	return false;
}

size_t
netpolicy_proxy_env(enum netpolicy_mode m, uint16_t port, char env[8][64])
{
	static const char *const names[] = {
		"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
	};
	size_t n = 0;

	if (m == NETPOLICY_NONE || port == 0)
		return 0;
	for (size_t i = 0; i < 4; i++)
		snprintf(env[n++], 64, "%s=http://192.168.5.2:%u", names[i],
		    (unsigned)port);
	snprintf(env[n++], 64, "NO_PROXY=localhost,127.0.0.1,::1");
	snprintf(env[n++], 64, "no_proxy=localhost,127.0.0.1,::1");
	return n;
}

size_t
netpolicy_allow_count(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p != '\0'; p++)
		if (p == text || p[-1] == '\n')
			n++;
	return n;
}

bool
netpolicy_allow_add(char *text, size_t cap, const char *pattern, char *why,
    size_t whylen)
{
	char pat[HOSTRULE_PATTERN_MAX + 1], rule[HOSTRULE_WHY_MAX];
	size_t len = strlen(text), pl;
	const char *p;

	if (!hostrule_check(pattern, HOSTRULE_ALLOW, pat, rule, sizeof rule)) {
		snprintf(why, whylen, "allow: %s", rule);
		return false;
	}
	pl = strlen(pat);
	/* A duplicate adds nothing. */
	for (p = text; *p != '\0';) {
		size_t n = strcspn(p, "\n");

		if (n == pl && memcmp(p, pat, pl) == 0)
			return true;
		p += n;
		if (*p == '\n')
			p++;
	}
	if (netpolicy_allow_count(text) >= NETPOLICY_ALLOW_MAX) {
		snprintf(why, whylen, "allow: at most %d patterns",
		    NETPOLICY_ALLOW_MAX);
		return false;
	}
	if (len + (len > 0) + pl + 1 > cap) {
		snprintf(why, whylen, "allow: the list is longer than %zu bytes",
		    cap - 1);
		return false;
	}
	if (len > 0)
		text[len++] = '\n';
	memcpy(text + len, pat, pl + 1);
	return true;
}
