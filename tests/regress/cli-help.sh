#!/usr/bin/env bash
# agent-lanectl help (issue 11): -h/--help and `help SUB` answered locally
# for every command, -V, and the help agreeing with the man page both ways:
# every command and option in the help is in the SYNOPSIS of
# docs/agent-lanectl.1 and every one there is in the help. No daemon runs:
# the socket named does not exist, so anything sent would fail.
. "$(dirname "$0")/lib.sh"

NOSOCK=$T/no/such.sock
nctl() { "$LANECTL" --socket "$NOSOCK" "$@"; }

OUT=$(nctl --help); RC=$?
check_eq "--help exits 0" 0 "$RC"
check_match "--help lists the commands" '^  create  ' "$OUT"
CMDS=$(printf '%s\n' "$OUT" | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 { print $1 }')
check_match "the command list is not empty" 'exec' "$CMDS"
for c in $CMDS; do
	A=$(nctl help "$c" 2>&1); RA=$?
	B=$(nctl "$c" --help 2>&1); RB=$?
	C=$(nctl "$c" -h 2>&1); RC=$?
	check_eq "help $c exits 0" 0 "$RA"
	check_eq "$c --help exits 0 without the daemon" 0 "$RB"
	check_eq "$c -h exits 0 without the daemon" 0 "$RC"
	check_match "help $c shows its usage" "^usage: agent-lanectl $c" "$A"
	check_eq "help $c, $c --help and $c -h agree" "$A" "$B"
	check_eq "$c -h and $c --help agree" "$B" "$C"
done
# The reports of issue 11, and help wherever it is on the line.
OUT=$(nctl rm --help 2>&1)
check_nomatch "rm --help does not try to destroy a lane called --help" 'CONNECT|NOT_FOUND' "$OUT"
OUT=$(nctl create -h 2>&1); RC=$?
check_eq "create -h is help, not an unexpected argument" 0 "$RC"
OUT=$(nctl rm al-0000000000000000 --help 2>&1); RC=$?
check_eq "help after an operand wins" "0 usage: agent-lanectl rm" "$RC $(printf '%s' "$OUT" | head -1 | cut -d' ' -f1-3)"
OUT=$(nctl ls --bogus --help 2>&1); RC=$?
check_eq "help wins over an unknown option" 0 "$RC"
OUT=$(nctl exec --help 2>&1); RC=$?
check_match "exec --help before the lane is help" '^usage: agent-lanectl exec' "$OUT"
OUT=$(nctl help nosuch 2>&1); RC=$?
check_eq "help of an unknown command exits 2" 2 "$RC"
OUT=$(nctl -V); RC=$?
check_eq "-V prints the client version without the daemon" "0 agent-lanectl 0." "$RC ${OUT:0:16}"
OUT=$(nctl --version); RC=$?
check_eq "--version too" "0 agent-lanectl 0." "$RC ${OUT:0:16}"
"$LANECTL" >/dev/null 2>&1; check_eq "no command prints the help and exits 0" 0 "$?"
nctl frobnicate >/dev/null 2>&1; check_eq "an unknown command exits 2" 2 "$?"
nctl rm -x >/dev/null 2>&1; check_eq "an unknown short option exits 2" 2 "$?"
nctl rm --frob >/dev/null 2>&1; check_eq "an unknown long option exits 2" 2 "$?"
OUT=$(nctl rm --frob 2>&1)
check_match "and names the option and where to look" 'unknown option --frob \(see agent-lanectl help rm\)' "$OUT"
nctl show >/dev/null 2>&1; check_eq "a missing operand exits 2" 2 "$?"
nctl cp --json a al-0000000000000000:b >/dev/null 2>&1
check_eq "--json on a command that prints nothing exits 2" 2 "$?"
nctl exec >/dev/null 2>&1; check_eq "exec without a lane exits 2" 2 "$?"
nctl create --cpus >/dev/null 2>&1; check_eq "an option without its value exits 2" 2 "$?"
nctl ls --all=yes >/dev/null 2>&1; check_eq "a flag given a value exits 2" 2 "$?"

# The help and the man page, both ways.
OUT=$(python3 - "$LANECTL" "$REPO/docs/agent-lanectl.1" <<'PY' 2>&1
import re, subprocess, sys
ctl, man = sys.argv[1], open(sys.argv[2]).read()
def run(*a):
    return subprocess.run([ctl, "--socket", "/nonexistent/s", *a],
        capture_output=True, text=True, check=True).stdout
top = run("help")
cmds = re.findall(r"^  (\S+)  ", top.split("Commands:")[1].split("\n\n")[0], re.M)
def options(text):
    sec = text.split("\nOptions:\n")[1].split("\n\n")[0] if "\nOptions:\n" in text else ""
    return {m[1]: m[0] for m in re.findall(r"^  (?:-(\w), )?\s*--([a-z-]+)", sec, re.M)}
syn = man.split(".Sh SYNOPSIS")[1].split(".Sh DESCRIPTION")[0]
blocks = [b for b in syn.split(".Nm\n") if b.strip()]
mancmd = {}
for b in blocks:
    m = re.match(r"\.Cm (\S+)", b)
    if m:
        mancmd[m.group(1)] = set(re.findall(r"Fl -([a-z-]+)", b))
errs = []
if set(cmds) != set(mancmd):
    errs.append("commands: help only %s, man only %s" % (
        sorted(set(cmds) - set(mancmd)), sorted(set(mancmd) - set(cmds))))
for c in cmds:
    h = options(run("help", c))
    m = mancmd.get(c, set())
    if set(h) != m:
        errs.append("%s: help only %s, man SYNOPSIS only %s" % (
            c, sorted(set(h) - m), sorted(m - set(h))))
    for long, short in h.items():
        if short and not re.search(r"^\.It Fl %s\b.*Fl -%s\b" % (short, long), man, re.M):
            errs.append("%s: -%s, --%s has no '.It Fl %s ... Fl -%s' in the man page" % (c, short, long, short, long))
    if not re.search(r"^(\.It Cm %s\b|\.It Xo\n\.Cm %s\b|\.It Cm \S+ Ar)" % (c, c), man, re.M) and ".It Cm %s" % c not in man:
        errs.append("%s: not described under COMMANDS" % c)
glob = options(top.replace("Global options, accepted anywhere before \"--\":", "Options:"))
for g in list(glob) + ["version"]:
    if not re.search(r"Fl -%s\b" % g, syn):
        errs.append("global --%s: not in the SYNOPSIS" % g)
print("\n".join(errs) if errs else "agree")
PY
)
check_eq "every command and option in the help is in the man page and vice versa" agree "$OUT"

# The commands that take --json are the ones the man page lists for it.
JSON_CMDS=
for c in $CMDS; do
	[ "$c" = help ] && continue
	OUT=$(nctl "$c" --json 2>&1)
	case $OUT in *"prints nothing to format"*) ;; *) JSON_CMDS="$JSON_CMDS $c" ;; esac
done
MAN_JSON=$(mandoc -T ascii "$REPO/docs/agent-lanectl.1" 2>/dev/null | col -b | tr -s ' \t\n' ' ' |
    sed -n 's/.*Every command that prints something takes it: \([^.]*\)\. The others.*/\1/p' |
    tr -d ',' | sed 's/ and / /; s/daemon status/daemon/')
check_eq "the man page lists the commands that take --json" \
    "$(printf '%s\n' $JSON_CMDS | sort | tr '\n' ' ')" "$(printf '%s\n' $MAN_JSON | sort | tr '\n' ' ')"

# The man pages are clean for mandoc (warnings and errors; style notes
# such as "referenced manual not found" depend on the host's manuals).
if command -v mandoc >/dev/null 2>&1; then
	for m in "$REPO/docs/agent-lanectl.1" "$REPO/docs/agent-laned.8"; do
		OUT=$(mandoc -T lint -W warning "$m" 2>&1); RC=$?
		check_eq "mandoc -T lint -W warning $(basename "$m") ($OUT)" 0 "$RC"
	done
else
	not_ok "mandoc is not installed (tests/install-deps.sh installs it)"
fi
