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
#       unit sim regress asan fuzz node lima
#   tests/check.sh lima-full    the real-Lima tier (`make check-lima`): the
#                               regress suites that are not specific to the
#                               simulator, and the checks only real Lima and
#                               a real guest can make (tests/lima/README.md)
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO" || exit 1

GROUPS_WANTED=${*:-unit sim regress asan fuzz node lima}
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

# A suite whose binary was not built is a failure, never a suite that
# silently did not run.
missing() {
	echo "not ok 1 - $1 is not built (make tests asan fuzz)"
	return 1
}

# run_built PREFIX BINDIR SRCDIR SRCGLOB RUNNER: one suite per source file
# (tests/unit/test_*.c, tests/fuzz/fuzz_*.c), run from its binary.
run_built() {
	local prefix=$1 bindir=$2 src name
	for src in $3/$4; do
		name=$(basename "$src" .c)
		if [ -x "$bindir/$name" ]; then
			run_suite "$prefix/$name" "$5" "$bindir/$name"
		else
			run_suite "$prefix/$name" missing "$bindir/$name"
		fi
	done
}

# skip_group GROUP REASON: counts the group's suites as skipped.
skip_group() {
	local n=1
	case $1 in
	regress) n=$(ls tests/regress/*.sh | grep -vc '/lib\.sh$') ;;
	lima-full) n=$(tests/lima/suites.sh | wc -w) ;;
	node) n=2 ;;
	lima) n=3 ;;
	esac
	SKIPPED=$((SKIPPED + n))
	printf '%-40s %4d skipped (%s)\n' "$1" "$n" "$2"
}

if want unit; then
	run_built unit build/tests tests/unit 'test_*.c' unit_suite
fi
# The simulator (bubblewrap) and everything that drives it are Linux-only;
# on a Mac, `make poc` (docs/POC.md) runs the real-Lima checks instead.
if [ "$(uname -s)" != Linux ]; then
	for g in sim regress node lima lima-full; do
		want "$g" && skip_group "$g" "needs Linux: the limactl simulator uses bubblewrap; on a Mac run make poc"
	done
	GROUPS_WANTED=$(echo " $GROUPS_WANTED " | sed -e 's/ sim / /' -e 's/ regress / /' \
	    -e 's/ node / /' -e 's/ lima / /' -e 's/ lima-full / /')
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
	run_built asan/unit build/asan/tests tests/unit 'test_*.c' unit_suite
	[ "$(uname -s)" = Linux ] ||
	    skip_group regress "asan/regress: needs Linux (the limactl simulator)"
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
	run_built fuzz build/fuzz tests/fuzz 'fuzz_*.c' fuzz_suite
fi
if want node; then
	run_suite "node/provider-lima" sh -c \
	    'cd client/sandcastle && node --test --test-reporter=tap test/'
	# The same suite against the newest Sandcastle on npm, when it is not
	# the locked one (client/sandcastle/README.md, "Requirements").
	run_suite "node/provider-lima-newest" sh -c \
	    'cd client/sandcastle && node scripts/test-newest.mjs'
fi

# Real Lima (tests/lima): every lane YAML through Lima 2.2's own `limactl
# validate`, one lane through create, exec, copy, the default policy and
# rm on a real QEMU guest, and the credential broker against a guest that
# tries to smuggle a request past it (broker.sh). Each reports itself skipped, with the
# reason, where Lima or QEMU cannot be had; never passed without running.
if want lima; then
	run_suite "lima/validate" tests/lima/validate.sh
	run_suite "lima/smoke" tests/lima/smoke.sh
	run_suite "lima/broker" tests/lima/broker.sh
fi
# The real-Lima tier (`make check-lima`): one suite at a time, so that at
# most two VMs boot at once on two cores.
if want lima-full; then
	for t in $(tests/lima/suites.sh); do
		run_suite "lima/$t" tests/lima/run.sh "$t"
	done
fi

if [ "${#FAILED_SUITES[@]}" -gt 0 ]; then
	echo "failed suites (logs in $LOGDIR): ${FAILED_SUITES[*]}"
else
	rm -rf "$LOGDIR"
fi
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
