#!/usr/bin/env bash
# packaging/homebrew/agent-lane.rb (issue 11): `ruby -c` accepts it, and its
# service block, evaluated with a stand-in for Homebrew's service DSL,
# describes the daemon the LaunchAgent of `agent-lanectl daemon install`
# runs. Homebrew itself cannot run here; packaging/homebrew/README.md says so.
. "$(dirname "$0")/lib.sh"

F=$REPO/packaging/homebrew/agent-lane.rb
if ! command -v ruby >/dev/null 2>&1; then
	not_ok "ruby is not installed (tests/install-deps.sh installs it)"
	exit 1
fi
OUT=$(ruby -c "$F" 2>&1); RC=$?
check_eq "ruby -c accepts the formula ($OUT)" 0 "$RC"

H=$T/home
mkdir -p "$H"
HOME=$H AGENT_LANE_SOCKET=$H/.agent-lane/run/agent-laned.sock \
    "$LANECTL" daemon install --no-load --platform launchd >/dev/null
P=$H/Library/LaunchAgents/dev.agent-lane.agent-laned.plist
check "the LaunchAgent was written" test -f "$P"

# The formula's service and dependencies as JSON, through a stand-in DSL.
J=$(HOME=$H ruby - "$F" <<'RUBY' 2>&1
require "json"
require "pathname"
PREFIX = "/opt/homebrew"
class Service
  attr_reader :h
  def initialize(block) = (@h = {}; instance_eval(&block))
  def opt_bin = Pathname.new("#{PREFIX}/opt/agent-lane/bin")
  def var = Pathname.new("#{PREFIX}/var")
  def std_service_path_env = "#{PREFIX}/bin:#{PREFIX}/sbin:/usr/bin:/bin:/usr/sbin:/sbin"
  def run(cmd) = (@h["ProgramArguments"] = Array(cmd).map(&:to_s))
  def run_type(t) = (@h["RunAtLoad"] = (t == :immediate))
  def environment_variables(v) = (@h["EnvironmentVariables"] = v.transform_keys(&:to_s))
  def keep_alive(v) = (@h["KeepAlive"] = v)
  def process_type(t) = (@h["ProcessType"] = t.to_s.capitalize)
  def log_path(p) = (@h["StandardOutPath"] = p.to_s)
  def error_log_path(p) = (@h["StandardErrorPath"] = p.to_s)
  def method_missing(name, *) = raise("the service block uses #{name}, unknown to this check")
  def respond_to_missing?(*) = false
end
class Formula
  class << self
    attr_reader :svc, :deps, :heads
    def desc(*) = nil
    def homepage(*) = nil
    def url(*) = nil
    def sha256(*) = nil
    def head(u, **) = (@heads = u)
    def depends_on(d) = ((@deps ||= []) << (d.is_a?(Hash) ? d.keys.first : d))
    def service(&b) = (@svc = b)
    def test(*, &) = nil
  end
end
load ARGV[0]
f = Object.const_get(:AgentLane)
puts JSON.generate({ "service" => Service.new(f.svc).h, "deps" => f.deps, "head" => f.heads })
RUBY
)
check_match "the formula evaluates" '^\{"service"' "$J"
OUT=$(python3 - "$P" "$J" "$H" <<'PY' 2>&1
import json, plistlib, sys
plist = plistlib.load(open(sys.argv[1], "rb"))
f = json.loads(sys.argv[2])
svc, home = f["service"], sys.argv[3]
errs = []
pa, fa = plist["ProgramArguments"], svc["ProgramArguments"]
if fa[0].rsplit("/", 1)[1] != "agent-laned" or fa[1:] != pa[1:]:
    errs.append("arguments differ: %s vs %s" % (fa, pa))
for k in ("RunAtLoad", "KeepAlive", "ProcessType"):
    if svc.get(k) != plist.get(k):
        errs.append("%s: formula %r, plist %r" % (k, svc.get(k), plist.get(k)))
fp = svc["EnvironmentVariables"]["PATH"].split(":")
if "/opt/homebrew/bin" not in fp or not set(["/usr/bin", "/bin"]) <= set(fp):
    errs.append("PATH %s lacks Homebrew's bin or the system's" % fp)
if svc.get("StandardOutPath") != svc.get("StandardErrorPath"):
    errs.append("stdout and stderr logs differ")
need = {"libevent", "protobuf-c", "sqlite", "libarchive", "libpsl", "pkg-config", "lima"}
if not need <= set(f["deps"]):
    errs.append("missing dependencies: %s" % sorted(need - set(f["deps"])))
print("\n".join(errs) or "agree")
PY
)
check_eq "the service block runs the LaunchAgent's daemon" agree "$OUT"
