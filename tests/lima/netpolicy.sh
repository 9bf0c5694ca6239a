#!/usr/bin/env bash
# The lane network policy on real Lima (part of `make check-lima`): the real
# agent-laned and agent-lanectl drive Lima 2.2's own limactl, so every lane
# gets its policy the way users' lanes do (the YAML's provision script, no
# guest root, the pre-ready check before `ready`). A server on host
# 127.0.0.1 plays the developer's local service.
#
# The allow part runs the test build of the daemon (build/tests/
# agent-laned-test), whose lane proxies resolve test names from
# AGENT_LANED_TEST_RESOLVE instead of DNS, so that an allowed name can lead
# to that loopback server; agent-laned itself has no such switch.
#
# It also prints, as "# measured:" lines, what a default lane can still
# reach (SECURITY.md keeps the table).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "the network policy on real Lima" "$0" "$@"
. "$HERE/../regress/lib.sh"
TESTD=$(dirname "$LANED")/tests/agent-laned-test
[ "$REAL_LIMA" = 1 ] || { echo "not ok 1 - not on real Lima (run it through tests/lima/run.sh)"; exit 1; }

json() {	# json LANE EXPR
	ctl show --json "$1" 2>/dev/null | python3 -c "import json,sys; l=json.load(sys.stdin); print($2)"
}
sshport() { sed -n 's/^ *Port \([0-9]*\).*/\1/p' "$(instance_dir "$1")/ssh.config" | head -1; }

mkdir -p "$T/www"
echo hello-from-host > "$T/www/index.txt"
python3 -c '
import http.server, socketserver, functools, sys
H = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/www" >"$T/srv.port" 2>/dev/null &
SRV=$!
stop_srv() { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
FINISH_HOOK=stop_srv
wait_for 5 test -s "$T/srv.port"
HS_PORT=$(cat "$T/srv.port")

# probe HOST,PORT,tcp|udp ...: "open" when a connection was made or
# refused (something answered), "blocked" when it timed out or the send
# failed (the rules dropped it). IPv6 literals work too.
cat > "$T/probe.pl" <<'PL'
use Socket qw(:all);
for my $a (@ARGV) {
  my ($h, $p, $proto) = split /,/, $a;
  my ($fam, $sa) = $h =~ /:/ ?
    (AF_INET6, pack_sockaddr_in6($p, inet_pton(AF_INET6, $h))) :
    (AF_INET, pack_sockaddr_in($p, inet_aton($h)));
  my $r;
  if ($proto eq 'udp') {
    socket(S, $fam, SOCK_DGRAM, 0) or die "socket: $!";
    $r = defined(send(S, "x", 0, $sa)) ? "open" : "blocked";
  } else {
    socket(S, $fam, SOCK_STREAM, 0) or die "socket: $!";
    local $SIG{ALRM} = sub { die "timeout\n" };
    eval { alarm 3; $r = connect(S, $sa) ? "open" :
      $!{ECONNREFUSED} ? "open" : "blocked ($!)"; alarm 0; };
    $r = "blocked (timeout)" if $@;
  }
  close S;
  print "$a $r\n";
}
PL
# A CONNECT through the proxy named by $HTTPS_PROXY (as a tool would use
# it), then a GET inside the tunnel.
cat > "$T/connect.pl" <<'PL'
use Socket;
my ($target) = @ARGV;
my ($ph, $pp) = ($ENV{HTTPS_PROXY} // '') =~ m{^http://([0-9.]+):(\d+)$} or die "no HTTPS_PROXY\n";
socket(S, PF_INET, SOCK_STREAM, 0) or die;
connect(S, pack_sockaddr_in($pp, inet_aton($ph))) or die "proxy: $!\n";
select((select(S), $| = 1)[0]);
print S "CONNECT $target HTTP/1.1\r\nHost: $target\r\n\r\n";
my $st = <S>; $st =~ s/\r?\n//; print "$st\n";
exit 0 unless $st =~ / 200 /;
while (my $l = <S>) { last if $l eq "\r\n" }
print S "GET /index.txt HTTP/1.0\r\nHost: x\r\n\r\n";
while (my $l = <S>) { print $l if $l =~ /hello/ }
PL

MODES=${NETPOLICY_VM_MODES:-internet none sudo allow}
want() { case " $MODES " in *" $1 "*) return 0 ;; esac; return 1; }

start_daemon || exit 1

# ---- A default lane: internet ----
if want internet; then
t0=$(date +%s)
D=$(ctl create --timeout "$(life 900)")
echo "# boot and check: $(( $(date +%s) - t0 )) s"
check_eq "a default lane is ready (the pre-ready check passed)" ready "$(lane_state "$D")"
check_eq "its network is internet" internet "$(json "$D" 'l["network"]')"
check_eq "and the policy is enforced" enforced "$(json "$D" 'l["network_policy"]')"
check_match "its events say so" "network +internet enforced" "$(ctl events "$D")"
P=$(sshport "$D")
out=$(ctl exec "$D" -- sudo -n true 2>&1); rc=$?
check "sudo -n true fails ($out)" test "$rc" -ne 0
out=$(ctl exec "$D" -- sh -c 'sudo -S -k -p "" true < ~/password' 2>&1); rc=$?
check "nor does the password Lima 2.2 gives the user (~/password) open sudo ($out)" \
    test "$rc" -ne 0
out=$(ctl exec "$D" -- /usr/sbin/nft flush ruleset 2>&1); rc=$?
check "nft flush ruleset fails ($out)" test "$rc" -ne 0
# Nor a root of its own: no user namespace reaches nf_tables (or any
# other root-only kernel code) from the lane user.
out=$(ctl exec "$D" -- unshare -Urn /usr/sbin/nft add table inet mine 2>&1); rc=$?
check "unshare -Urn nft add table fails ($out)" test "$rc" -ne 0
check_eq "user.max_user_namespaces is 0" 0 "$(ctl exec "$D" -- cat /proc/sys/user/max_user_namespaces)"
out=$(ctl exec "$D" -- sh -c 'cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo absent')
check_match "kernel.unprivileged_userns_clone is 0 where it exists ($out)" '^(0|absent)$' "$out"
check_eq "the rules' stamp is still there" "internet enforced" \
    "$(ctl exec "$D" -- cat /run/agent-lane/netpolicy)"
check "copy in works under the rules" ctl cp "$T/probe.pl" "$D:probe.pl"
check_eq "exec works under the rules" exec-ok "$(ctl exec "$D" -- echo exec-ok)"
check "copy out works under the rules" ctl cp "$D:probe.pl" "$T/back.pl"
check "and brings the same bytes" cmp -s "$T/probe.pl" "$T/back.pl"
# What a hostile agent in a default lane can still reach, measured.
MIRROR=$(ctl exec "$D" -- getent ahostsv4 deb.debian.org 2>/dev/null | awk 'NR == 1 { print $1 }')
res=$(ctl exec "$D" -- perl probe.pl \
    192.168.5.2,$HS_PORT,tcp 192.168.5.2,$P,tcp 192.168.5.2,22,tcp \
    192.168.5.2,53,udp 192.168.5.2,67,udp \
    192.168.5.3,53,tcp 192.168.5.3,53,udp 192.168.5.3,22,tcp \
    192.168.5.1,80,tcp 10.0.2.2,80,tcp 172.17.0.1,2375,tcp \
    192.168.1.1,80,tcp 169.254.169.254,80,tcp 100.100.100.100,53,udp \
    fec0::2,$HS_PORT,tcp fe80::2,80,tcp ${MIRROR:+$MIRROR,80,tcp} 2>&1)
echo "$res" | sed 's/^/# measured: /'
for w in "192.168.5.2,$HS_PORT,tcp blocked" "192.168.5.2,$P,tcp blocked" \
    "192.168.5.2,22,tcp blocked" "192.168.5.3,53,tcp open" "192.168.5.3,53,udp open" \
    "192.168.5.3,22,tcp blocked" "192.168.5.1,80,tcp blocked" "10.0.2.2,80,tcp blocked" \
    "172.17.0.1,2375,tcp blocked" "169.254.169.254,80,tcp blocked" \
    "100.100.100.100,53,udp blocked" "fec0::2,$HS_PORT,tcp blocked"; do
	check_match "measured: $w" "^$w" "$res"
done
if [ -n "$MIRROR" ]; then
	check_match "the internet (the Debian mirror $MIRROR:80) is reachable" "^$MIRROR,80,tcp open" "$res"
else
	echo "# the guest could not resolve deb.debian.org: no internet figure"
fi
check "DNS answers through 192.168.5.3 (the covert channel SECURITY.md names)" \
    eval 'ctl exec "$D" -- getent hosts deb.debian.org >/dev/null'
ctl rm "$D" >/dev/null
fi

# ---- none ----
if want none; then
N=$(ctl create --network none --timeout "$(life 600)")
check_eq "--network none: ready" ready "$(lane_state "$N")"
check_eq "--network none: enforced" enforced "$(json "$N" 'l["network_policy"]')"
out=$(ctl exec "$N" -- sh -c 'getent hosts deb.debian.org; echo rc=$?' 2>&1)
check_match "--network none blocks DNS ($out)" 'rc=2' "$out"
check_eq "--network none: exec works" exec-ok "$(ctl exec "$N" -- echo exec-ok)"
ctl rm "$N" >/dev/null
fi

# ---- --sudo: advisory ----
if want sudo; then
S=$(ctl create --sudo --timeout "$(life 600)")
check_eq "--sudo: ready" ready "$(lane_state "$S")"
check_eq "--sudo: the policy is advisory" advisory "$(json "$S" 'l["network_policy"]')"
check_match "and its events say why" "network +internet advisory: .*guest root" "$(ctl events "$S")"
check "--sudo: sudo -n true works" ctl exec "$S" -- sudo -n true
check_eq "--sudo: the rules were loaded all the same" "internet advisory" \
    "$(ctl exec "$S" -- cat /run/agent-lane/netpolicy)"
# The control: the probe sees the host server once the rules are gone,
# which a --sudo lane can do. That is what "advisory" means.
ctl cp "$T/probe.pl" "$S:probe.pl" >/dev/null
res=$(ctl exec "$S" -- perl probe.pl 192.168.5.2,$HS_PORT,tcp 2>&1)
check_match "--sudo: the host server is blocked while the rules hold" "blocked" "$res"
check "--sudo: root can unload the rules" ctl exec "$S" -- sudo -n /usr/sbin/nft flush ruleset
res=$(ctl exec "$S" -- perl probe.pl 192.168.5.2,$HS_PORT,tcp 2>&1)
echo "# measured (--sudo, rules flushed): $res"
check_match "--sudo: then the guest reaches host 127.0.0.1 (the probe can see it)" \
    "^192.168.5.2,$HS_PORT,tcp open" "$res"
ctl rm "$S" >/dev/null
fi
stop_daemon

# ---- allow, through the lane's own proxy ----
if want allow; then
AGENT_LANED_TEST_RESOLVE="allowed.test=127.0.0.1,rebind.test=!127.0.0.1" \
    LANED=$TESTD start_daemon --proxy-connect-ports "443,$HS_PORT" || exit 1
A=$(ctl create --network allow --allow allowed.test --allow rebind.test --timeout "$(life 600)")
check_eq "allow: ready" ready "$(lane_state "$A")"
check_eq "allow: enforced" enforced "$(json "$A" 'l["network_policy"]')"
PX=$(json "$A" 'l["proxy_port"]')
check_match "allow: execs get HTTPS_PROXY" "^HTTPS_PROXY=http://192.168.5.2:$PX\$" \
    "$(ctl exec "$A" -- env)"
ctl cp "$T/connect.pl" "$A:connect.pl" && ctl cp "$T/probe.pl" "$A:probe.pl"
out=$(ctl exec "$A" -- perl connect.pl "allowed.test:$HS_PORT" 2>&1)
check_match "allow: an allowed name reaches the host server through the proxy ($(echo $out))" \
    'hello-from-host' "$out"
out=$(ctl exec "$A" -- perl connect.pl example.org:443 2>&1)
check_match "allow: another name is refused ($out)" ' 403 ' "$out"
out=$(ctl exec "$A" -- perl connect.pl "rebind.test:$HS_PORT" 2>&1)
check_match "allow: a name resolving to 127.0.0.1 is refused ($out)" ' 403 ' "$out"
res=$(ctl exec "$A" -- perl probe.pl 192.168.5.2,$HS_PORT,tcp 192.168.5.3,53,udp \
    192.168.5.2,"$(sshport "$A")",tcp 2>&1)
echo "$res" | sed 's/^/# measured (allow): /'
check_match "allow: the host server directly is blocked" "^192.168.5.2,$HS_PORT,tcp blocked" "$res"
check_match "allow: DNS is blocked" "^192.168.5.3,53,udp blocked" "$res"
EV=$(ctl events "$A")
check_match "allow: the allowed connection is in the lane's events" \
    "proxy-allow +CONNECT allowed\\.test:$HS_PORT via 127\\.0\\.0\\.1" "$EV"
check_match "allow: the refusal is in the events" \
    "proxy-deny +CONNECT example\\.org:443: host not in the allow list" "$EV"
check_match "allow: the rebinding refusal too" \
    "proxy-deny +CONNECT rebind\\.test:$HS_PORT: resolves to 127\\.0\\.0\\.1" "$EV"
ctl rm "$A" >/dev/null
fi
finish
