#!/usr/bin/env bash
# `make poc`: the real-Lima tier's suites (tests/lima/suites.sh, the same
# test code `make check-lima` runs on Linux) on a Mac with Homebrew's Lima,
# then a report to paste into an issue. docs/POC.md is the runbook around it.
#
#   make poc                          every suite (about an hour with vz)
#   tests/lima/poc.sh smoke netpolicy some of them
#
# It runs as you, with Lima's default VM type and agent-laned's default base
# template (template:_images/ubuntu-lts, which Lima downloads on first use).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO" || exit 1

if [ "$(uname -s)" != Darwin ] && [ -z "${AL_POC_ANY_OS:-}" ]; then
	echo "make poc is for a Mac with Homebrew's Lima; on Linux, make check-lima runs the same suites" >&2
	exit 2
fi
command -v limactl >/dev/null 2>&1 || { echo "poc: limactl not found: brew install lima" >&2; exit 2; }

SUITES=${*:-smoke validate $("$HERE/suites.sh")}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/al-poc.XXXXXX")
start=$(date +%s)
total_p=0 total_f=0 total_s=0
{
	echo "## Agent Lane POC report"
	echo
	echo "- date: $(date -u +%FT%TZ)"
	echo "- agent-lane: $(build/agent-lanectl -V 2>&1 | head -n 1) ($(git rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
	echo "- lima: $(limactl --version 2>&1)"
	if [ "$(uname -s)" = Darwin ]; then
		echo "- macOS: $(sw_vers -productVersion 2>/dev/null) ($(sw_vers -buildVersion 2>/dev/null)), $(uname -m)"
		echo "- machine: $(sysctl -n hw.model 2>/dev/null), $(sysctl -n machdep.cpu.brand_string 2>/dev/null), $(( $(sysctl -n hw.memsize 2>/dev/null || echo 0) / 1073741824 )) GiB"
	else
		echo "- host: $(uname -sr), $(uname -m)"
	fi
	echo
	echo "| suite | passed | failed | skipped | seconds |"
	echo "|---|---|---|---|---|"
} > "$OUT/report.md"
for s in $SUITES; do
	t=$(date +%s)
	if [ "$s" = smoke ] || [ "$s" = validate ]; then
		"$HERE/$s.sh" > "$OUT/$s.log" 2>&1
	else
		"$HERE/run.sh" "$s" > "$OUT/$s.log" 2>&1
	fi
	rc=$?
	p=$(grep -E '^ *ok [0-9]+' "$OUT/$s.log" | grep -Evc '# SKIP')
	k=$(grep -E '^ *ok [0-9]+' "$OUT/$s.log" | grep -Ec '# SKIP')
	f=$(grep -Ec '^ *not ok [0-9]+' "$OUT/$s.log")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + k))
	echo "| $s | $p | $f | $k | $(( $(date +%s) - t )) |" >> "$OUT/report.md"
	printf '%-14s %4d passed %4d failed %4d skipped\n' "$s" "$p" "$f" "$k" >&2
done
{
	echo
	echo "$total_p passed, $total_f failed, $total_s skipped in $(( $(date +%s) - start )) s"
	for s in $SUITES; do
		if grep -Eq '^ *not ok|# SKIP' "$OUT/$s.log"; then
			echo
			echo "### $s"
			echo '```'
			grep -E '^ *not ok|# SKIP|^# (create|limactl|measured|boot)' "$OUT/$s.log" | head -n 40
			echo '```'
		fi
	done
	echo
	echo "Figures (\`# ...\` lines of the logs):"
	echo '```'
	cat "$OUT"/*.log | grep -E '^# (create|limactl|copy|boot|image|measured|docker|ready)' | head -n 60
	echo '```'
} >> "$OUT/report.md"
echo >&2
cat "$OUT/report.md"
echo >&2
echo "poc: logs in $OUT; the report above is $OUT/report.md" >&2
[ "$total_f" -eq 0 ]
