#!/usr/bin/env bash
# Runs one suite of the real-Lima tier (`make check-lima`) as the tier's
# user, against Lima 2.2's own limactl: tests/lima/NAME.sh if there is one,
# else the regress suite tests/regress/NAME.sh, which tests/regress/lib.sh
# then points at real Lima (AL_REAL_LIMA=1).
#
#   tests/lima/run.sh NAME      e.g. tests/lima/run.sh lifecycle
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=${1:?usage: tests/lima/run.sh SUITE}
shift
. "$HERE/tier.sh"
lima_tier_enter "real-Lima $NAME" "$0" "$NAME" "$@"
# The regress suite run.sh shares this file's name: never this file itself.
if [ -f "$HERE/$NAME.sh" ] && [ "$NAME" != run ]; then
	exec bash "$HERE/$NAME.sh" "$@"
fi
[ -f "$HERE/../regress/$NAME.sh" ] || { echo "not ok 1 - no suite $NAME"; exit 1; }
exec bash "$HERE/../regress/$NAME.sh" "$@"
