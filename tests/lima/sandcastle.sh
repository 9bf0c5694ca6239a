#!/usr/bin/env bash
# The Sandcastle end to end on real Lima (part of `make check-lima`): the
# provider's node tests that boot lanes through the real @ai-hero/sandcastle
# package, run against agent-laned driving Lima 2.2's own limactl:
# image.test.mjs (lima({ image }) and lima({ provision }) with real clones,
# and createSandbox + run with the real claudeCode() agent definition
# against a fake `claude` the provision script installs, whose commit must
# reach the host branch) and e2e.test.mjs (a fake agent's commit and
# uncommitted work come back; close() destroys the lane), and
# secrets-e2e.test.mjs (the key reaches the upstream, never the guest).
# Sandcastle abandons a create() after a fixed 120 s, shorter than a cold
# boot under TCG here: on real Lima the tests make each lane first through
# the provider's own createLaneHandle() and create() hands it over
# (sandboxFor in test-support/harness.mjs); the rest is Sandcastle's run.
#
# Then the pooled half, as a user on a slow host runs it: a lane is
# prepared (the fake `claude` installed) and committed to an image; the
# daemon restarts with a warm pool of that image in the allow policy; and
# lima({ image, secrets }) goes to Sandcastle as it is, whose create() takes
# the booted pool lane (well inside its 120 s). The fake claude calls a
# loopback HTTPS upstream through the lane's proxy with $ANTHROPIC_API_KEY:
# the upstream sees the real value, the guest only the placeholder. The
# test build of the daemon resolves api.test to that upstream and trusts
# its CA (tests/proxy/testhooks.h), as in tests/lima/poolsecret.sh.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tier.sh"
lima_tier_enter "Sandcastle on real Lima" "$0" "$@"
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO/client/sandcastle" || exit 1
[ -d node_modules/@ai-hero/sandcastle ] ||
    { echo "not ok 1 - client/sandcastle has no node_modules (npm ci)"; exit 1; }
[ -f dist/index.js ] || { echo "not ok 1 - client/sandcastle is not built (make node)"; exit 1; }
# The harness takes the limactl to drive from LIMA_SIM; the daemon takes
# the base template and QEMU wrapper from the environment.
export AL_TEST_BOOT_S=$AL_BOOT_S
T_NODE=$(date +%s)
node --test --test-reporter=tap --test-concurrency=1 \
    test/image.test.mjs test/e2e.test.mjs test/secrets-e2e.test.mjs
NODE_RC=$?
echo "# the provider's node tests: $(( $(date +%s) - T_NODE )) s, exit $NODE_RC"
cd "$REPO" || exit 1

# ---- The pooled half (lib.sh numbers its own checks) ----
. "$HERE/../regress/lib.sh"
[ "$NODE_RC" -eq 0 ] || not_ok "the provider's node tests passed (exit $NODE_RC)"
TESTD=$(dirname "$LANED")/tests/agent-laned-test
[ -x "$TESTD" ] || { not_ok "$TESTD is not built (make tests)"; exit 1; }
IMAGE=sandcastle-prepared
now_ms() { date +%s%3N; }
T_POOL=$(now_ms)

UP=$T/up
mkdir -p "$UP"
python3 "$REPO/tests/regress/secret_upstream.py" "$UP" >"$T/up.ports" 2>"$T/up.err" &
UPID=$!
stop_upstream() { kill "$UPID" 2>/dev/null; wait "$UPID" 2>/dev/null; }
FINISH_HOOK=stop_upstream
wait_for 20 test -s "$T/up.ports" || { not_ok "the test upstream started: $(cat "$T/up.err")"; exit 1; }
read -r HTTPS_PORT _ <"$T/up.ports"

# (1) A lane is prepared with the fake claude and committed to an image.
cat >"$T/claude" <<'CLAUDE'
#!/bin/bash
# A fake `claude` for claudeCode(): stream-json, the prompt on stdin; it
# calls the API with the key it was given and commits what it saw.
set -e
case " $* " in *" --output-format stream-json "*) ;; *) echo "fake claude: expected stream-json" >&2; exit 2 ;; esac
case " $* " in *" -p - "*|*" -p -") ;; *) echo "fake claude: expected the prompt on stdin (-p -)" >&2; exit 2 ;; esac
cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"fake-pool-1","model":"fake"}'
printf '%s\n' "$ANTHROPIC_API_KEY" > key-seen.txt
curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \
    -d '{"model":"claude-test","max_tokens":1}' "$UPSTREAM_URL/v1/messages" > reply.txt 2>&1 || true
{ env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; } > guest-env.txt || true
git add key-seen.txt reply.txt guest-env.txt
git commit -q -m "claude: called the API"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"called the API"}]}}\n'
printf '{"type":"result","subtype":"success","result":"done: %s","session_id":"fake-pool-1"}\n' "$(git rev-parse --short HEAD)"
CLAUDE
start_daemon || exit 1
t=$(now_ms)
PREP=$(ctl create --name prep --sudo --timeout "$(life 1800)")
COLD_MS=$(( $(now_ms) - t ))
echo "# prep lane (cold) -> ready: $COLD_MS ms"
check_eq "the prep lane is ready" ready "$(lane_state "$PREP")"
ctl cp "$T/claude" "$PREP:claude" >/dev/null
check_eq "the fake claude is installed in it" /usr/local/bin/claude \
    "$(ctl exec -n "$PREP" -- sh -c 'sudo -n install -m 0755 claude /usr/local/bin/claude && rm claude && command -v claude' 2>&1)"
t=$(now_ms)
check_eq "the prep lane is committed to an image" "$IMAGE" "$(ctl commit "$PREP" "$IMAGE" 2>"$T/commit.err")"
echo "# commit: $(( $(now_ms) - t )) ms"
[ "$(lane_state "$PREP")" = ready ] || sed 's/^/#   /' "$T/commit.err"
ctl rm "$PREP" >/dev/null 2>&1
stop_daemon

# (2) The daemon again, with a warm pool of that image, in the allow policy.
booted_pool() {
	ctl ls --all --json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    if l["state"] == "pooled" and l["workspace"]:
        print(l["name"])'
}
have_booted() { [ -n "$(booted_pool)" ]; }
LANED=$TESTD AGENT_LANED_TEST_RESOLVE="api.test=127.0.0.1" \
    AGENT_LANED_TEST_TRUST="$UP/ca.pem" start_daemon --network allow \
    --pool-shape "1 image=$IMAGE" --pool-max-boots 1 \
    --proxy-connect-ports "$HTTPS_PORT" || exit 1
t=$(now_ms)
check "a pool lane of the image boots" wait_for "$(bw 30 2)" have_booted
echo "# pool lane of the image booted: $(( $(now_ms) - t )) ms after the restart"
P=$(booted_pool)
check_match "it is a clone of the committed image" "image +$IMAGE" "$(ctl events "$P")"

# (3) + (4) Sandcastle's run, lima({ image, secrets }) as it is.
HOSTREPO=$T/repo
mkdir -p "$HOSTREPO"
git -C "$HOSTREPO" init -q -b main
echo "# pooled test repo" >"$HOSTREPO/README.md"
# Its own identity: Sandcastle applies the lane's commits with git am here.
git -C "$HOSTREPO" config user.name "Lane Tester"
git -C "$HOSTREPO" config user.email lane-tester@example.com
git -C "$HOSTREPO" add README.md
git -C "$HOSTREPO" commit -q -m init
KEY="sk-ant-api03-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
t=$(now_ms)
ANTHROPIC_API_KEY=$KEY node "$HERE/sandcastle-pool.mjs" "$SOCK" "$IMAGE" \
    "https://api.test:$HTTPS_PORT" "$HOSTREPO" "$T/run.json" >"$T/run.out" 2>&1
RC=$?
echo "# Sandcastle run (create + run + close): $(( $(now_ms) - t )) ms, exit $RC"
[ "$RC" -eq 0 ] || sed 's/^/#   /' "$T/run.out"
R() { python3 -c 'import json,sys; print(eval(sys.argv[1], {}, json.load(open(sys.argv[2]))))' "$1" "$T/run.json" 2>/dev/null; }
CREATE_MS=$(R providerCreateMs)
echo "# pooled create: lima()'s create() $CREATE_MS ms, Sandcastle's createSandbox() $(R createMs) ms (the pool lane's boot above)"
check_eq "the run's lane is the pool lane" "['$P'] [True]" "$(R lanes) $(R wasPooled)"
check_match "its events say it was taken from the pool" "taken-from-pool" "$(R "'\\n'.join(events)")"
check "its create took under a quarter of the prep lane's cold boot ($COLD_MS ms)" \
    test -n "$CREATE_MS" -a "$(( ${CREATE_MS:-999999999} * 4 ))" -lt "$COLD_MS"
check_eq "the lane carries the secret" "[[{'name': 'ANTHROPIC_API_KEY', 'hosts': ['api.test'], 'headers': []}]]" "$(R secrets)"
check_eq "the fake claude's commit reached the host branch" "1 claude: called the API|Fake Claude" "$(R commits) $(R subject)"
if [ "$(R commits)" != 1 ]; then
	echo "# the run's output and the agent's log:"
	{ R stdout; cat "$T/run.out" "$HOSTREPO"/.sandcastle/logs/*.log; } 2>&1 | tail -n 40 | cut -c1-300 | sed 's/^/#   /'
fi
check_match "the guest saw the placeholder" '^AGENTLANE_SECRET_[0-9a-f]{48}$' "$(R keySeen)"
check_match "its curl reached the upstream through the proxy over HTTPS" \
    "hello from the test upstream" "$(R reply)"
check_eq "the upstream saw the real value" "api.test:$HTTPS_PORT $KEY" "$(tail -n 1 "$UP/seen" 2>/dev/null)"
check_nomatch "no process in the guest had it, nor did the run print it" "$KEY" \
    "$(R guestEnv)$(R stdout)$(cat "$T/run.out")"
check_match "the use is in the lane's events" "secret-use secret ANTHROPIC_API_KEY used for api.test" "$(R "'\\n'.join(events)")"
check_eq "the daemon's log holds no value" "" "$(grep -aF -e "$KEY" "$LOG")"
echo "# the pooled half: $(( $(now_ms) - T_POOL )) ms"
ctl image rm "$IMAGE" >/dev/null 2>&1
finish

