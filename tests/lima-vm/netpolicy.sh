#!/usr/bin/env bash
# The lane network policy on real VMs (part of `make check-vm`). Lanes do
# not take a policy yet, so this drives the VM limactl directly with the
# lane YAML agent-laned writes (tests/unit/golden/lane.yaml) plus the keys
# daemon/netpolicy.c generates for each mode (printed by
# build/tests/al-netpolicy-print), and the allow mode's proxy runs in its
# test harness (build/tests/al-proxy-harness) on host 127.0.0.1. A server
# on host 127.0.0.1 plays the developer's local service.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
L=${LIMA_SIM:-$REPO/tests/lima-vm/limactl}
B=$(dirname "${AGENT_LANED:-$REPO/build/agent-laned}")/tests
T=$(mktemp -d /tmp/alnp.XXXXXX)
export LIMA_HOME=$T/lh
mkdir -p "$LIMA_HOME"
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { local w=$1; shift; if "$@"; then ok "$w"; else not_ok "$w"; fi; }
has() { printf '%s' "$2" | grep -Eq -- "$1"; }

HS_PORT=18080
python3 -m http.server $HS_PORT --bind 127.0.0.1 --directory "$T" >/dev/null 2>&1 &
HS=$!
PX=
cleanup() {
	for i in npi npn npa; do
		[ -d "$LIMA_HOME/$i" ] && "$L" delete --force "$i" >/dev/null 2>&1
	done
	kill "$HS" 2>/dev/null
	[ -n "$PX" ] && kill "$PX" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
echo hello-from-host > "$T/index.txt"

cat > "$T/probe.pl" <<'PL'
use Socket;
for my $a (@ARGV) {
  my ($h, $p, $proto) = split /,/, $a;
  my $r;
  if ($proto eq 'udp') {
    socket(S, PF_INET, SOCK_DGRAM, 0) or die;
    $r = defined(send(S, "x", 0, pack_sockaddr_in($p, inet_aton($h)))) ? "open" : "blocked";
  } else {
    socket(S, PF_INET, SOCK_STREAM, 0) or die;
    local $SIG{ALRM} = sub { die "timeout\n" };
    eval { alarm 3; $r = connect(S, pack_sockaddr_in($p, inet_aton($h))) ? "open" :
      $!{ECONNREFUSED} ? "open" : "blocked"; alarm 0; };
    $r = "blocked" if $@;
  }
  close S;
  print "$a $r\n";
}
PL
# A CONNECT through the proxy, then a GET inside the tunnel.
cat > "$T/connect.pl" <<'PL'
use Socket;
my ($port, $target) = @ARGV;
socket(S, PF_INET, SOCK_STREAM, 0) or die;
connect(S, pack_sockaddr_in($port, inet_aton("192.168.5.2"))) or die "proxy: $!\n";
select((select(S), $| = 1)[0]);
print S "CONNECT $target HTTP/1.1\r\nHost: $target\r\n\r\n";
my $st = <S>; $st =~ s/\r?\n//; print "$st\n";
exit 0 unless $st =~ / 200 /;
while (my $l = <S>) { last if $l eq "\r\n" }
print S "GET /index.txt HTTP/1.0\r\nHost: x\r\n\r\n";
while (my $l = <S>) { print $l if $l =~ /hello/ }
PL

boot() {	# boot MODE NAME [PROXYPORT]: lane YAML + the mode's keys
	{ cat "$REPO/tests/unit/golden/lane.yaml"
	  "$B/al-netpolicy-print" "$1" yaml "${3:-0}"; } > "$T/$2.yaml" || return 1
	"$L" create --tty=false --name="$2" "$T/$2.yaml" >/dev/null 2>&1 &&
	    "$L" start --tty=false "$2" >/dev/null 2>&1
}
g() { local i=$1; shift; "$L" shell "$i" -- "$@"; }
sshport() { sed -n 's/^ *Port \([0-9]*\).*/\1/p' "$LIMA_HOME/$1/ssh.config" | head -1; }

MODES=${NETPOLICY_VM_MODES:-internet none allow}
want() { case " $MODES " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- internet (the default) ----
if want internet; then
t0=$(date +%s)
check "internet: a lane with the policy boots" boot internet npi
echo "# boot: $(( $(date +%s) - t0 )) s"
P=$(sshport npi)
check "internet: the provision script stamped the rules" test "$(g npi cat /run/agent-lane/netpolicy)" = "internet enforced"
out=$(g npi sudo -n true 2>&1); rc=$?
check "internet: sudo -n true fails ($out)" test "$rc" -ne 0
out=$(g npi /usr/sbin/nft flush ruleset 2>&1); rc=$?
check "internet: nft flush ruleset fails ($out)" test "$rc" -ne 0
check "internet: the rules are still there afterwards" test "$(g npi cat /run/agent-lane/netpolicy)" = "internet enforced"
out=$(g npi sh -c "$("$B/al-netpolicy-print" internet check "$P")" 2>&1)
check "internet: the pre-ready check passes ($out)" test "$out" = "ok internet"
"$L" copy "$T/probe.pl" npi:/tmp/probe.pl >/dev/null 2>&1
check "internet: copy in works under the rules" test "$(g npi wc -c < /dev/null /tmp/probe.pl | cut -d' ' -f1)" = "$(wc -c < "$T/probe.pl" | tr -d ' ')"
check "internet: exec works under the rules" test "$(g npi echo exec-ok)" = exec-ok
res=$(g npi perl /tmp/probe.pl 192.168.5.2,$HS_PORT,tcp 192.168.5.2,$P,tcp \
    192.168.5.2,22,tcp 192.168.5.3,53,tcp 192.168.5.3,53,udp 192.168.5.3,22,tcp \
    10.0.2.2,80,tcp 169.254.169.254,80,tcp 172.17.0.1,2375,tcp 192.168.5.1,80,tcp \
    100.100.100.100,53,udp)
echo "$res" | sed 's/^/# measured: /'
for want in "192.168.5.2,$HS_PORT,tcp blocked" "192.168.5.2,$P,tcp blocked" \
    "192.168.5.2,22,tcp blocked" "192.168.5.3,53,tcp open" "192.168.5.3,53,udp open" \
    "192.168.5.3,22,tcp blocked" "10.0.2.2,80,tcp blocked" "169.254.169.254,80,tcp blocked" \
    "172.17.0.1,2375,tcp blocked" "192.168.5.1,80,tcp blocked" "100.100.100.100,53,udp blocked"; do
	check "internet: $want" has "^$want\$" "$res"
done
check "internet: DNS answers through 192.168.5.3" eval 'g npi getent hosts deb.debian.org >/dev/null'
"$L" copy npi:/tmp/probe.pl "$T/back.pl" >/dev/null 2>&1
check "internet: copy out works under the rules" cmp -s "$T/probe.pl" "$T/back.pl"
"$L" delete --force npi >/dev/null 2>&1
fi

# ---- none ----
if want none; then
check "none: a lane with the policy boots" boot none npn
res=$(g npn sh -c 'getent hosts deb.debian.org; echo rc=$?')
check "none: DNS is blocked ($res)" has 'rc=2' "$res"
check "none: exec works" test "$(g npn echo exec-ok)" = exec-ok
"$L" delete --force npn >/dev/null 2>&1
fi

# ---- allow, through the proxy harness ----
if want allow; then
# The harness exits when its stdin closes: fd 7 holds the fifo open.
mkfifo "$T/pxin"
"$B/al-proxy-harness" --allow allowed.test --allow rebind.test \
    --trust allowed.test=127.0.0.1 --map rebind.test=127.0.0.1 \
    --connect-ports "443,$HS_PORT" < "$T/pxin" > "$T/proxy.events" 2>&1 &
PX=$!
exec 7> "$T/pxin"
for _ in $(seq 50); do grep -qs '^port ' "$T/proxy.events" && break; sleep 0.1; done
PXPORT=$(sed -n 's/^port //p' "$T/proxy.events")
check "allow: a lane with the policy boots (proxy port $PXPORT)" boot allow npa "$PXPORT"
"$L" copy "$T/connect.pl" npa:/tmp/connect.pl >/dev/null 2>&1
"$L" copy "$T/probe.pl" npa:/tmp/probe.pl >/dev/null 2>&1
out=$(g npa perl /tmp/connect.pl "$PXPORT" allowed.test:$HS_PORT 2>&1)
check "allow: an allowed name reaches the host server through the proxy ($(echo $out))" \
    has 'hello-from-host' "$out"
out=$(g npa perl /tmp/connect.pl "$PXPORT" example.org:443 2>&1)
check "allow: another name is refused ($out)" has ' 403 ' "$out"
out=$(g npa perl /tmp/connect.pl "$PXPORT" rebind.test:$HS_PORT 2>&1)
check "allow: a name resolving to 127.0.0.1 is refused ($out)" has ' 403 ' "$out"
res=$(g npa perl /tmp/probe.pl 192.168.5.2,$HS_PORT,tcp 192.168.5.3,53,udp 192.168.5.2,$PXPORT,tcp)
echo "$res" | sed 's/^/# measured: /'
check "allow: the host server directly is blocked" has "^192.168.5.2,$HS_PORT,tcp blocked\$" "$res"
check "allow: DNS is blocked" has "^192.168.5.3,53,udp blocked\$" "$res"
sleep 0.5
ev=$(cat "$T/proxy.events")
check "allow: the allowed connection is recorded" has "proxy-allow CONNECT allowed.test:$HS_PORT" "$ev"
check "allow: the refusals are recorded" has "proxy-deny CONNECT example.org:443: host not in the allow list" "$ev"
check "allow: the rebinding refusal is recorded" has "rebind.test:$HS_PORT: resolves to 127.0.0.1" "$ev"
"$L" delete --force npa >/dev/null 2>&1
fi

echo "# $n checks, $failed failed"
[ "$failed" -eq 0 ]
