#!/usr/bin/env bash
# Runs every test suite and ends with one line:
# "N passed, N failed, N skipped".
#
# Suites print TAP-style lines ("ok N - what" / "not ok N - what"); each
# such line counts once, and an "ok" line carrying "# SKIP reason" counts
# as skipped, not passed. A suite that exits non-zero without a "not ok"
# line (a crash) counts as one failure; so does one that reports nothing.
#
#   tests/check.sh              everything (what `make check` runs)
#   tests/check.sh unit regress only some groups:
#       unit sim regress asan fuzz node vm
#   tests/check.sh vm-full      the real-VM tier (`make check-vm`): the
#                               regress suites that are not specific to the
#                               simulator, on QEMU VMs, plus the VM-only checks
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 1

GROUPS_WANTED=${*:-unit sim regress asan fuzz node vm}
PASSED=0
FAILED=0
SKIPPED=0
FAILED_SUITES=()
LOGDIR=$(mktemp -d /tmp/alcheck.XXXXXX)

want() {
	case " $GROUPS_WANTED " in *" $1 "*) return 0 ;; esac
	return 1
}

# run_suite NAME COMMAND...: runs, echoes, and counts one suite.
run_suite() {
	local name=$1 log rc p f s start end
	shift
	log=$LOGDIR/$(echo "$name" | tr '/ ' '__').log
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
	p=$(grep -E '^ *ok [0-9]+' "$log" | grep -Evc '# SKIP')
	s=$(grep -E '^ *ok [0-9]+' "$log" | grep -Ec '# SKIP')
	f=$(grep -Ec '^ *not ok [0-9]+' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited $rc without reporting a failure" >>"$log"
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		f=1
		echo "not ok - $name reported no results" >>"$log"
	fi
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	SKIPPED=$((SKIPPED + s))
	if [ "$f" -gt 0 ]; then
		FAILED_SUITES+=("$name")
		printf '%-40s %4d passed %4d FAILED  (%ss)\n' "$name" "$p" "$f" \
		    $((end - start))
		grep -E '^ *not ok|^#' "$log" | head -n 80 | sed 's/^/    /'
	elif [ "$s" -gt 0 ]; then
		printf '%-40s %4d passed %4d skipped (%ss)\n' "$name" "$p" "$s" \
		    $((end - start))
		grep -E '# SKIP' "$log" | sed 's/^ *ok [0-9]* - /    skipped: /'
	else
		printf '%-40s %4d passed             (%ss)\n' "$name" "$p" \
		    $((end - start))
	fi
}

# cmocka with TAP output.
unit_suite() {
	CMOCKA_MESSAGE_OUTPUT=TAP "$1"
}

# One fuzzer over its corpus for a bounded number of runs.
fuzz_suite() {
	local bin=$1 name corpus
	name=$(basename "$bin")
	corpus=$REPO/tests/fuzz/corpus/$name
	work=$(mktemp -d /tmp/alfuzz.XXXXXX)
	[ -d "$corpus" ] && cp -r "$corpus"/. "$work"/ 2>/dev/null
	if "$bin" -runs=20000 -max_total_time=20 -rss_limit_mb=2048 \
	    -timeout=10 "$work" >"$work.log" 2>&1; then
		echo "ok 1 - $name: $(grep -Eo 'Done [0-9]+ runs' "$work.log" | tail -1)"
	else
		tail -n 40 "$work.log" | sed 's/^/# /'
		echo "not ok 1 - $name crashed or leaked"
	fi
	rm -rf "$work" "$work.log"
}

if want unit; then
	for t in build/tests/test_*; do
		[ -x "$t" ] && run_suite "unit/$(basename "$t")" unit_suite "$t"
	done
fi
# The simulator (bubblewrap) and everything that drives it are Linux-only;
# on a Mac, docs/POC.md is the runbook against real Lima.
if [ "$(uname -s)" != Linux ]; then
	for g in sim regress node vm-full; do
		want "$g" && echo "$g: skipped (needs Linux: the limactl simulator uses bubblewrap)"
	done
	GROUPS_WANTED=$(echo " $GROUPS_WANTED " | sed -e 's/ sim / /' -e 's/ regress / /' \
	    -e 's/ node / /' -e 's/ vm-full / /')
fi

if want sim; then
	run_suite "lima-sim/test-sim.sh" tests/lima-sim/test-sim.sh
fi
if want regress; then
	for t in tests/regress/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue
		run_suite "regress/$(basename "$t" .sh)" "$t"
	done
fi
if want asan; then
	# The same unit and regress suites against the ASan+UBSan build.
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	for t in build/asan/tests/test_*; do
		[ -x "$t" ] && run_suite "asan/unit/$(basename "$t")" unit_suite "$t"
	done
	for t in tests/regress/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue
		[ "$(uname -s)" = Linux ] || break
		AGENT_LANED=$REPO/build/asan/agent-laned \
		AGENT_LANECTL=$REPO/build/asan/agent-lanectl \
		    run_suite "asan/regress/$(basename "$t" .sh)" "$t"
	done
	unset ASAN_OPTIONS UBSAN_OPTIONS
fi
if want fuzz; then
	for b in build/fuzz/fuzz_*; do
		[ -x "$b" ] && run_suite "fuzz/$(basename "$b")" fuzz_suite "$b"
	done
fi
if want node; then
	run_suite "node/provider-lima" sh -c \
	    'cd client/sandcastle && node --test --test-reporter=tap test/'
fi

# The real-VM smoke test: one lane on QEMU (skips itself, with the reason,
# where QEMU or the guest image is missing).
if want vm; then
	run_suite "lima-vm/smoke" tests/lima-vm/smoke.sh
fi
# The real-VM tier: one suite at a time, so at most two VMs run at once.
# AL_BOOT_S bounds a TCG boot; lifetimes that span a boot add it.
if want vm-full; then
	for t in lifecycle exec copy service crash lifetimes lane-secrets; do
		LIMA_SIM=$REPO/tests/lima-vm/limactl AL_BOOT_S=${AL_BOOT_S:-120} \
		    run_suite "lima-vm/regress/$t" tests/regress/$t.sh
	done
	# A guest's HTTPS call with a secret through the lane's proxy.
	LIMA_SIM=$REPO/tests/lima-vm/limactl run_suite "lima-vm/node/secrets-e2e" \
	    sh -c 'cd client/sandcastle && node --test --test-reporter=tap test/secrets-e2e.test.mjs'
	run_suite "lima-vm/test-vm" tests/lima-vm/test-vm.sh
	run_suite "lima-vm/netpolicy" tests/lima-vm/netpolicy.sh
	run_suite "lima-vm/docker" tests/lima-vm/docker.sh
fi

if [ "${#FAILED_SUITES[@]}" -gt 0 ]; then
	echo "failed suites (logs in $LOGDIR): ${FAILED_SUITES[*]}"
else
	rm -rf "$LOGDIR"
fi
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
