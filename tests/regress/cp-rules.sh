#!/usr/bin/env bash
# cp follows docker cp's rules (issue 18 item 9), in both directions: a
# file or a directory into an existing directory lands inside it under its
# name; a destination ending in "/" must be a directory; "SRC/." copies a
# directory's contents; "." is a destination like any directory; a file
# keeps its mode; a directory never replaces a file nor a file a
# directory. Into an existing directory, a copied directory merges.
. "$(dirname "$0")/lib.sh"
umask 022

start_daemon || exit 1
L=$(ctl create --timeout 10m)
g() { ctl exec "$L" -- "$@"; }
# What is at a guest path, relative to the workspace: "file:CONTENT",
# "dir", or "none".
gwhat() { g sh -c 'if [ -d "$1" ]; then echo dir; elif [ -f "$1" ]; then echo "file:$(cat "$1")"; else echo none; fi' w "$1"; }
hwhat() { if [ -d "$1" ]; then echo dir; elif [ -f "$1" ]; then echo "file:$(cat "$1")"; else echo none; fi; }

H=$T/h
mkdir -p "$H/src/sub"
echo a >"$H/a.txt"
printf '#!/bin/sh\necho run\n' >"$H/run.sh"; chmod 0750 "$H/run.sh"
echo s1 >"$H/src/s1"; echo s2 >"$H/src/sub/s2"

# ---- Into the lane -------------------------------------------------------
g mkdir -p d2 d3 d4 d5 d6/a.txt d7/src/old d8
g sh -c 'echo old > d5/a.txt; echo file > f; echo keep > d7/src/keep; echo keep > d8/keep; echo old > d8/s1'
check "in: a file into an existing directory" ctl cp "$H/a.txt" "$L:d2"
check_eq "lands inside it under its name" "file:a" "$(gwhat d2/a.txt)"
check "in: the same with a trailing /" ctl cp "$H/a.txt" "$L:d3/"
check_eq "lands inside it too" "file:a" "$(gwhat d3/a.txt)"
OUT=$(ctl cp "$H/a.txt" "$L:newdir/" 2>&1); RC=$?
check_eq "in: a file to a missing DIR/ fails" 1 "$RC"
check_match "NOT_FOUND: no such directory" 'NOT_FOUND.*newdir/: no such directory' "$OUT"
check_eq "and makes nothing, neither file nor directory" none "$(gwhat newdir)"
check "in: a file to ." ctl cp "$H/a.txt" "$L:."
check_eq "lands in the workspace" "file:a" "$(gwhat a.txt)"
check "in: a file over an existing file" ctl cp "$H/a.txt" "$L:d5/a.txt"
check_eq "replaces it" "file:a" "$(gwhat d5/a.txt)"
check "in: a file to a new name" ctl cp "$H/a.txt" "$L:d4/b.txt"
check_eq "gets that name" "file:a" "$(gwhat d4/b.txt)"
OUT=$(ctl cp "$H/a.txt" "$L:d6" 2>&1); RC=$?
check_eq "in: a file onto a directory of its name fails" 1 "$RC"
check_match "FAILED_PRECONDITION: cannot copy a file onto a directory" \
    'FAILED_PRECONDITION: cannot copy a file onto d6/a.txt, a directory' "$OUT"
check_eq "which is left alone" dir "$(gwhat d6/a.txt)"
check "in: a file keeps its mode" ctl cp "$H/run.sh" "$L:run.sh"
check_eq "rwxr-x--- in the guest" 750 "$(g stat -c %a run.sh)"

check "in: a directory into an existing directory" ctl cp "$H/src" "$L:d2"
check_eq "lands inside it under its name" "file:s1 file:s2" "$(gwhat d2/src/s1) $(gwhat d2/src/sub/s2)"
check "in: the same with the source's trailing /" ctl cp "$H/src/" "$L:d3"
check_eq "still under its name" "file:s1" "$(gwhat d3/src/s1)"
check "in: a directory into one holding its name: merged" ctl cp "$H/src" "$L:d7"
check_eq "the new files and the old ones" "file:s1 dir file:keep" \
    "$(gwhat d7/src/s1) $(gwhat d7/src/old) $(gwhat d7/src/keep)"
check "in: DIR/. into an existing directory" ctl cp "$H/src/." "$L:d8"
check_eq "its contents, merged, replacing same names" "file:s1 file:s2 file:keep" \
    "$(gwhat d8/s1) $(gwhat d8/sub/s2) $(gwhat d8/keep)"
check "in: a directory to a missing name" ctl cp "$H/src" "$L:fresh"
check_eq "is made with its contents" "file:s1 file:s2" "$(gwhat fresh/s1) $(gwhat fresh/sub/s2)"
check "in: a directory to ." ctl cp "$H/src" "$L:."
check_eq "lands in the workspace under its name" "file:s1" "$(gwhat src/s1)"
check "in: . (the current directory) to a directory" sh -c "cd '$H/src' && '$LANECTL' --socket '$SOCK' cp . '$L:dot'"
check_eq "copies its contents" "file:s1 file:s2" "$(gwhat dot/s1) $(gwhat dot/sub/s2)"
OUT=$(ctl cp "$H/src" "$L:f" 2>&1); RC=$?
check_eq "in: a directory onto a file fails" 1 "$RC"
check_match "FAILED_PRECONDITION: cannot copy a directory onto a file" \
    'FAILED_PRECONDITION: cannot copy a directory onto f, which is not a directory' "$OUT"
check_eq "which is left alone" "file:file" "$(gwhat f)"
OUT=$(ctl cp "$H/a.txt/" "$L:d2" 2>&1); RC=$?
check_eq "in: a file named with a trailing / fails" 1 "$RC"
check_eq "the workspace has no temporary left" "" \
    "$(g find . -name '.agent-lane-in.*')"

# ---- Out of the lane -------------------------------------------------------
g sh -c 'mkdir -p gsrc/sub gx/x && echo g1 > gsrc/g1 && echo g2 > gsrc/sub/g2 && echo ga > ga.txt &&
    printf "#!/bin/sh\n" > gexec.sh && chmod 0755 gexec.sh && echo secret > gsecret && chmod 0600 gsecret &&
    echo gx > gx/y'
O=$T/o
mkdir -p "$O/e1" "$O/e2" "$O/e3/ga.txt" "$O/e4/gsrc/old" "$O/e5" "$O/e6/x"
echo keep >"$O/e4/gsrc/keep"; echo keep >"$O/e5/keep"; echo old >"$O/e5/g1"; echo file >"$O/f"
echo keep >"$O/e6/keep"
check "out: a file into an existing directory" ctl cp "$L:ga.txt" "$O/e1"
check_eq "lands inside it under its name" "file:ga" "$(hwhat "$O/e1/ga.txt")"
check "out: the same with a trailing /" ctl cp "$L:ga.txt" "$O/e2/"
check_eq "lands inside it too" "file:ga" "$(hwhat "$O/e2/ga.txt")"
OUT=$(ctl cp "$L:ga.txt" "$O/newdir/" 2>&1); RC=$?
check_eq "out: a file to a missing DIR/ fails" 1 "$RC"
check_match "NOT_FOUND: no such directory" 'NOT_FOUND.*newdir/: no such directory' "$OUT"
check_eq "and makes nothing" none "$(hwhat "$O/newdir")"
check "out: a file to ." sh -c "cd '$O' && '$LANECTL' --socket '$SOCK' cp '$L:ga.txt' ."
check_eq "lands in the current directory" "file:ga" "$(hwhat "$O/ga.txt")"
check "out: a file over an existing file" ctl cp "$L:ga.txt" "$O/f"
check_eq "replaces it" "file:ga" "$(hwhat "$O/f")"
echo file >"$O/f"
OUT=$(ctl cp "$L:ga.txt" "$O/e3" 2>&1); RC=$?
check_eq "out: a file onto a directory of its name fails" 1 "$RC"
check_match "FAILED_PRECONDITION: cannot copy a file onto a directory" \
    "FAILED_PRECONDITION: cannot copy a file onto $O/e3/ga.txt, a directory" "$OUT"
check_eq "which is left alone" dir "$(hwhat "$O/e3/ga.txt")"
check "out: a file keeps its mode" ctl cp "$L:gexec.sh" "$O/gexec.sh"
check_eq "rwxr-xr-x on the host (0755 less the umask)" 755 "$(stat -c %a "$O/gexec.sh")"
check "out: a private file" ctl cp "$L:gsecret" "$O/gsecret"
check_eq "stays rw-------" 600 "$(stat -c %a "$O/gsecret")"

check "out: a directory into an existing directory" ctl cp "$L:gsrc" "$O/e1"
check_eq "lands inside it under its name" "file:g1 file:g2" "$(hwhat "$O/e1/gsrc/g1") $(hwhat "$O/e1/gsrc/sub/g2")"
check "out: a directory into one holding its name: merged" ctl cp "$L:gsrc" "$O/e4"
check_eq "the new files and the old ones" "file:g1 dir file:keep" \
    "$(hwhat "$O/e4/gsrc/g1") $(hwhat "$O/e4/gsrc/old") $(hwhat "$O/e4/gsrc/keep")"
check "out: DIR/. into an existing directory" ctl cp "$L:gsrc/." "$O/e5"
check_eq "its contents, merged, replacing same names" "file:g1 file:g2 file:keep" \
    "$(hwhat "$O/e5/g1") $(hwhat "$O/e5/sub/g2") $(hwhat "$O/e5/keep")"
check "out: a directory to a missing name" ctl cp "$L:gsrc" "$O/fresh"
check_eq "is made with its contents" "file:g1 file:g2" "$(hwhat "$O/fresh/g1") $(hwhat "$O/fresh/sub/g2")"
check "out: a directory to ." sh -c "cd '$O' && '$LANECTL' --socket '$SOCK' cp '$L:gsrc' ."
check_eq "lands in the current directory under its name" "file:g1" "$(hwhat "$O/gsrc/g1")"
OUT=$(ctl cp "$L:gsrc" "$O/f" 2>&1); RC=$?
check_eq "out: a directory onto a file fails" 1 "$RC"
check_match "FAILED_PRECONDITION: cannot copy a directory onto a file" \
    "FAILED_PRECONDITION: cannot copy a directory onto $O/f, which is not a directory" "$OUT"
check_eq "which is left alone" "file:file" "$(hwhat "$O/f")"
# gx/x is a directory in the guest and e6/x one here, but gx/y is a file
# where e6/y is nothing: fine; now make e6/y a directory: a conflict.
mkdir "$O/e6/y"
OUT=$(ctl cp "$L:gx/." "$O/e6" 2>&1); RC=$?
check_eq "out: a merge where a file would replace a directory fails" 1 "$RC"
check_match "naming it" "cannot copy a file onto $O/e6/y, a directory" "$OUT"
check_eq "and moves nothing: the directory is as it was" "keep x y" "$(ls "$O/e6" | tr '\n' ' ' | sed 's/ $//')"
check_eq "no temporary is left" "" "$(find "$O" -name '*.agent-lane-*')"
ctl rm "$L" >/dev/null
finish
