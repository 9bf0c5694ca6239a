#!/usr/bin/env bash
# The VM smoke test of `make check`: one lane on a real QEMU VM through
# create, exec, copy in, copy out and rm. Where this machine cannot run it
# (no QEMU, no image), it reports itself skipped with the reason; it never
# passes without having run.
HERE=$(cd "$(dirname "$0")" && pwd)

skip_all() {
	echo "ok 1 - VM smoke test # SKIP $*"
	exit 0
}

[ "$(uname -s)" = Linux ] || skip_all "needs Linux (QEMU with the guest image built here)"
[ "$(uname -m)" = x86_64 ] || skip_all "the guest image is x86_64 only"
for t in qemu-system-x86_64 qemu-img ssh ssh-keygen scp; do
	command -v "$t" >/dev/null 2>&1 || skip_all "$t is not installed (tests/install-deps.sh installs it)"
done
command -v genisoimage >/dev/null 2>&1 || command -v xorriso >/dev/null 2>&1 ||
    skip_all "genisoimage (or xorriso) is not installed"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed"
t=$(date +%s)
if ! IMG=$("$HERE/build-image.sh" 2>"${TMPDIR:-/tmp}/vm-smoke-build.$$"); then
	why=$(tail -n 1 "${TMPDIR:-/tmp}/vm-smoke-build.$$")
	rm -f "${TMPDIR:-/tmp}/vm-smoke-build.$$"
	skip_all "the guest image cannot be built here: ${why:-unknown reason}"
fi
rm -f "${TMPDIR:-/tmp}/vm-smoke-build.$$"
echo "# guest image: $IMG (ready in $(( $(date +%s) - t )) s)"

export LIMA_SIM=$HERE/limactl
. "$HERE/../regress/lib.sh"

start_daemon || exit 1
t=$(date +%s%N)
L=$(ctl create --cpus 2 --memory 1G --disk 4G --timeout 30m)
check_eq "a lane is created on a real VM" ready "$(lane_state "$L")"
echo "# create -> ready: $(( ($(date +%s%N) - t) / 1000000 )) ms"
GK=$(ctl exec "$L" -- uname -r)
check "exec runs in the guest's own kernel ($GK)" test -n "$GK" -a "$GK" != "$(uname -r)"
head -c 2097152 /dev/urandom > "$T/blob"
mkdir -p "$T/tree/sub" && echo hello > "$T/tree/sub/f" && cp "$T/blob" "$T/tree/blob"
check "copy in" ctl cp "$T/tree" "$L:tree"
check_eq "arrives intact" "$(sha256sum < "$T/blob" | cut -d' ' -f1)" \
    "$(ctl exec "$L" -- sh -c 'sha256sum < tree/blob' | cut -d' ' -f1)"
check "copy out" ctl cp "$L:tree" "$T/back"
check "comes back intact" diff -r "$T/tree" "$T/back"
check "rm" ctl rm "$L"
check "the VM is gone" test ! -e "$(instance_dir "$L")"
