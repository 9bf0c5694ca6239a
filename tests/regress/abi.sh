#!/usr/bin/env bash
# libagentlane's ABI: its dynamic symbols are exactly the functions that
# agentlane.h declares AL_API (no protobuf-c, no internals), and the
# version in the header is the library's and the CLI's.
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LANECTL=${AGENT_LANECTL:-$REPO/build/agent-lanectl}
LIB=$(cd "$(dirname "$LANECTL")" && pwd)/libagentlane.so
H=$REPO/client/agentlane.h
T=$(mktemp -d /tmp/alabi.XXXXXX)
trap 'rm -rf "$T"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

# Every declaration starts "AL_API <type> [*]al_name(": the name is the
# last al_ identifier before the first "(" of the declaration.
DECLARED=$(awk '/^AL_API /{ d = $0; while (d !~ /\(/ && (getline l) > 0) d = d " " l;
    sub(/\(.*/, "", d); n = split(d, w, /[ *]+/); print w[n] }' "$H" | sort)
# nm failing must fail the checks below, not make them pass.
if ! NM=$(nm -D --defined-only "$LIB" 2>&1) || [ -z "$NM" ]; then
	not_ok "nm -D --defined-only $LIB: $(printf '%s' "$NM" | head -3)"
	exit 1
fi
EXPORTED=$(printf '%s\n' "$NM" | awk 'NF >= 3 { print $3 }' | sort)
if [ -n "$DECLARED" ] && [ "$DECLARED" = "$EXPORTED" ]; then
	ok "the library exports exactly the $(echo "$DECLARED" | wc -l) functions agentlane.h declares"
else
	not_ok "exported symbols differ from the API: $(diff <(echo "$DECLARED") <(echo "$EXPORTED") | grep '^[<>]' | head -20 | tr '\n' ' ')"
fi
if printf '%s\n' "$NM" | grep -q 'protobuf_c\|agentlane__v1__'; then
	not_ok "protobuf code is hidden"
elif ! printf '%s\n' "$NM" | grep -q ' al_hello$'; then
	not_ok "protobuf code is hidden: the symbol list nm gave holds no al_hello"
else
	ok "protobuf code is hidden"
fi
# Every other symbol in the header is a macro or a type, not a function.
if grep -Eq '^[a-z].*\bal_[a-z_]+\(' "$H"; then
	not_ok "every function in agentlane.h is marked AL_API"
else
	ok "every function in agentlane.h is marked AL_API"
fi

cat > "$T/v.c" <<'C'
#include <stdio.h>
#include <agentlane.h>
int main(void) {
	struct al_exec_opts eo = AL_EXEC_OPTS_INIT;
	struct al_copy_out_opts co = AL_COPY_OUT_OPTS_INIT;
	struct al_create_opts cr = AL_CREATE_OPTS_INIT;
	struct al_error err;
	struct al_client *c = al_client_new("/nonexistent/sock", "abi");
	printf("%u %u %s %d %d %d %d %d\n", al_version(), (unsigned)AL_VERSION_NUM,
	    al_version_string(), eo.stdin_fd, eo.stdout_fd, eo.stderr_fd,
	    eo.size == sizeof eo && co.size == sizeof co && cr.size == sizeof cr,
	    al_hello(c, NULL, &err) == AL_CONNECT && err.code == AL_CONNECT);
	al_client_free(c);
	return 0;
}
C
# The sanitizer build's library needs its runtime in the program too.
CC_TEST="cc -std=c11"
if nm -D "$LIB" | grep -q __asan_; then
	CC_TEST="clang -std=c11 -fsanitize=address,undefined"
fi
if $CC_TEST -Wall -Werror -I"$REPO/client" -o "$T/v" "$T/v.c" -L"$(dirname "$LIB")" \
    -lagentlane 2>"$T/cc.err"; then
	ln -s "$LIB" "$T/libagentlane.so.2"
	OUT=$(LD_LIBRARY_PATH=$T "$T/v")
	set -- $OUT ""
	if [ "$1" = "$2" ] && [ "$3" = "$("$LANECTL" --version | awk '{print $2}')" ]; then
		ok "al_version() is AL_VERSION_NUM and the CLI's version ($3)"
	else
		not_ok "versions agree (got: $OUT)"
	fi
	if [ "$4 $5 $6" = "-1 -1 -1" ] && [ "$7" = 1 ]; then
		ok "the INIT macros set the size and AL_EXEC_OPTS_INIT sets the fds to -1"
	else
		not_ok "INIT macros (got: $OUT)"
	fi
	if [ "$8" = 1 ]; then
		ok "a call returns its al_code (AL_CONNECT for no daemon)"
	else
		not_ok "a call returns its al_code (got: $OUT)"
	fi
else
	not_ok "a program using the API compiles against the built library: $(head -5 "$T/cc.err")"
fi

# Array elements of the API keep their size: the caller indexes them with
# its own sizeof (a secret's headers went beside struct al_lane_secret,
# al_lane_secret_headers, and into al_create_opts, which has a size).
cat > "$T/sz.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#include <agentlane.h>
int main(void) {
	printf("%zu %zu %zu %zu %d\n", sizeof(struct al_secret),
	    sizeof(struct al_lane_secret), sizeof(struct al_lane_secrets),
	    offsetof(struct al_create_opts, secret_headers),
	    sizeof(void *) == 8 && sizeof(size_t) == 8);
	return 0;
}
C
if $CC_TEST -Wall -Werror -I"$REPO/client" -o "$T/sz" "$T/sz.c" 2>"$T/cc.err"; then
	set -- $("$T/sz")
	if [ "$5" != 1 ]; then
		ok "# SKIP the sizes below are an LP64 platform's, and this one is not"
	elif [ "$1 $2 $3" = "32 1104 40" ]; then
		ok "struct al_secret, al_lane_secret and al_lane_secrets keep their sizes (32, 1104, 40)"
	else
		not_ok "array element structs changed size: al_secret $1, al_lane_secret $2, al_lane_secrets $3 (want 32 1104 40)"
	fi
	if [ "$5" = 1 ] && [ "$4" = 144 ]; then
		ok "al_create_opts' secret headers come after every field it had (offset 144, the old size)"
	elif [ "$5" = 1 ]; then
		not_ok "al_create_opts.secret_headers is at $4, not after the old end (144)"
	fi
else
	not_ok "the size probe compiles: $(head -5 "$T/cc.err")"
fi
[ "$failed" -eq 0 ]
