#!/usr/bin/env bash
# `make install PREFIX=...` gives binaries, the library, its header and a
# pkg-config file that a third-party program can build and run against.
. "$(dirname "$0")/lib.sh"

P=$T/prefix
OUT=$(make -s -C "$REPO" install PREFIX="$P" 2>&1); RC=$?
check_eq "make install succeeds ($(echo "$OUT" | tail -1))" 0 "$RC"
for f in bin/agent-laned bin/agent-lanectl include/agentlane.h \
    lib/libagentlane.a lib/pkgconfig/agentlane.pc share/man/man8/agent-laned.8 \
    share/man/man1/agent-lanectl.1 share/agent-lane/agent-laned.conf.example \
    share/bash-completion/completions/agent-lanectl \
    share/zsh/site-functions/_agent-lanectl \
    share/fish/vendor_completions.d/agent-lanectl.fish; do
	check "installs $f" test -e "$P/$f"
done
check_match "the bash completion is the script" '^complete -F _agent_lanectl agent-lanectl$' \
    "$(cat "$P/share/bash-completion/completions/agent-lanectl")"
check_match "the pkg-config file points at the prefix" "^prefix=$P\$" \
    "$(cat "$P/lib/pkgconfig/agentlane.pc")"

export PKG_CONFIG_PATH=$P/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
OUT=$(cc -std=c11 -Wall -Werror -o "$T/libclient" "$(dirname "$0")/libclient.c" \
    $(pkg-config --cflags --libs agentlane) 2>&1); RC=$?
check_eq "a program builds against it with pkg-config ($OUT)" 0 "$RC"

start_daemon || exit 1
LD_LIBRARY_PATH=$P/lib "$T/libclient" "$SOCK" "$T"
