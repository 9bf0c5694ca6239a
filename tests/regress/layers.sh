#!/usr/bin/env bash
# Layering of daemon/ and client/lib/ (issue 31, structure item 1), as
# cli-layers.sh does for client/ctl: the order files tests/layers/*.order
# list each directory's modules bottom first, and the objects of the build
# under test (nm) must call only down that order, list exactly the modules
# built, and name every allowed call up as an exception. The checker is
# tests/tools/layers.py; it is first shown to fail on orders that are
# wrong, so that a pass means something. No daemon runs.
. "$(dirname "$0")/lib.sh"

BUILD_DIR=$(cd "$(dirname "$LANED")" && pwd)
TOOL=$REPO/tests/tools/layers.py
if ! command -v nm >/dev/null; then
	not_ok "nm is installed (binutils): the call graph is read with it"
	exit 1
fi
layers() { python3 "$TOOL" "$@" 2>&1; }
ORDERS=$T/orders
mkdir -p "$ORDERS"

for pair in daemon:daemon client/lib:client-lib; do
	dir=${pair%%:*} order=$REPO/tests/layers/${pair#*:}.order
	obj=$BUILD_DIR/obj/$dir
	OUT=$(layers check "$REPO/$dir" "$obj" "$order"); RC=$?
	check_eq "$dir calls only down $(basename "$order")" 0 "$RC"
	[ "$RC" = 0 ] || printf '%s\n' "$OUT" | sed 's/^/# /'
	check_match "$dir: no call cycle" 'cycles 0$' "$OUT"
	check_match "$dir: the objects were read" '^modules [1-9][0-9]*, calls [1-9]' "$OUT"

	# The checker itself: the order upside down has calls up, ...
	mods=$(grep -vE '^\s*(#|$|except )' "$order")
	printf '%s\n' "$mods" | tac >"$ORDERS/reversed"
	OUT=$(layers check "$REPO/$dir" "$obj" "$ORDERS/reversed"); RC=$?
	check_eq "$dir: the order reversed fails" 1 "$RC"
	check_match "$dir: naming a call up" '^call up: ' "$OUT"
	# ... a module left out is named, ...
	last=$(printf '%s\n' "$mods" | tail -1)
	printf '%s\n' "$mods" | grep -vx "$last" >"$ORDERS/short"
	OUT=$(layers check "$REPO/$dir" "$obj" "$ORDERS/short"); RC=$?
	check_eq "$dir: an order without $last fails" "1" "$RC"
	check_match "$dir: saying to add it" "^not in .*: $last \(add" "$OUT"
	# ... and an exception for a call that runs down is stale.
	first=$(printf '%s\n' "$mods" | head -1)
	{ printf '%s\n' "$mods"; echo "except $last -> $first"; } >"$ORDERS/stale"
	OUT=$(layers check "$REPO/$dir" "$obj" "$ORDERS/stale"); RC=$?
	check_match "$dir: a needless exception fails" "^stale exception: $last -> $first" "$OUT"
done

# A named exception lets exactly its call up through: move a module that
# the daemon's main calls above it, and allow that one call.
mods=$(grep -vE '^\s*(#|$|except )' "$REPO/tests/layers/daemon.order")
{ printf '%s\n' "$mods" | grep -vx log; echo log; } >"$ORDERS/log-top"
OUT=$(layers check "$REPO/daemon" "$BUILD_DIR/obj/daemon" "$ORDERS/log-top"); RC=$?
check_eq "log put on top: every caller of log is a call up" 1 "$RC"
check_match "agent-laned -> log among them" '^call up: agent-laned -> log ' "$OUT"
ups=$(printf '%s\n' "$OUT" | sed -n 's/^call up: \([^ ]*\) -> \([^ ]*\) .*/except \1 -> \2/p')
{ cat "$ORDERS/log-top"; printf '%s\n' "$ups"; } >"$ORDERS/log-allowed"
OUT=$(layers check "$REPO/daemon" "$BUILD_DIR/obj/daemon" "$ORDERS/log-allowed"); RC=$?
check_eq "each of those calls named as an exception: passes" 0 "$RC"
finish
