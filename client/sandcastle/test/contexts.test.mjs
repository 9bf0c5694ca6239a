// Which daemon the provider reaches (issue 19): as agent-lanectl decides it,
// from the same context files that agent-lanectl writes (read with the same
// strict rules), against the real daemon and the limactl simulator.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { AgentLaneClient, lima } from "../dist/index.js";
import { parseContext, parseHost, sshEnv } from "../dist/transport.js";
import { useDaemon, tempDirs, repoRoot } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();
const lanectl = process.env.AGENT_LANECTL ?? path.join(repoRoot, "build", "agent-lanectl");
let home = "";

before(async () => {
  await daemon.start();
  home = tmpdir("/tmp/alch-");
  fs.chmodSync(home, 0o700);
});

/** agent-lanectl with this test's HOME and no host variables. */
function ctl(...args) {
  const env = { ...process.env, HOME: home };
  delete env.AGENT_LANE_HOST;
  delete env.AGENT_LANE_SOCKET;
  delete env.AGENT_LANE_CONTEXT;
  return execFileSync(lanectl, args, { env, encoding: "utf8" });
}

/** A client made with HOME and the host variables as given. */
function client(opts = {}, vars = {}) {
  const saved = {};
  for (const k of ["HOME", "AGENT_LANE_HOST", "AGENT_LANE_SOCKET", "AGENT_LANE_CONTEXT"]) {
    saved[k] = process.env[k];
    delete process.env[k];
  }
  process.env.HOME = home;
  Object.assign(process.env, vars);
  try {
    return new AgentLaneClient(opts);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test("a context agent-lanectl wrote reaches its daemon; the current one is followed", async () => {
  ctl("context", "create", "here", "--host", `unix://${daemon.socketPath}`, "--description", "the test daemon");
  const c = client({ context: "here" });
  assert.equal(c.host, `unix://${daemon.socketPath}`);
  assert.equal((await c.hello()).protocolVersion, 1);
  assert.equal(client().socketPath.endsWith(".agent-lane/run/agent-laned.sock"), true, "no current context: the default socket");
  ctl("context", "use", "here");
  assert.equal(client().socketPath, daemon.socketPath, "the current context");
  ctl("context", "create", "nowhere", "--host", "unix:///nonexistent/s.sock");
  assert.equal(client({}, { AGENT_LANE_CONTEXT: "nowhere" }).socketPath, "/nonexistent/s.sock", "AGENT_LANE_CONTEXT beats the current one");
  assert.equal(client({}, { AGENT_LANE_HOST: "ssh://me@far:2222", AGENT_LANE_CONTEXT: "nowhere" }).host, "ssh://me@far:2222", "AGENT_LANE_HOST beats AGENT_LANE_CONTEXT");
  assert.equal(client({}, { AGENT_LANE_SOCKET: "/x/s.sock" }).socketPath, "/x/s.sock", "AGENT_LANE_SOCKET beats the current context");
  assert.equal(client({ socketPath: "/y/s.sock" }, { AGENT_LANE_HOST: "ssh://far" }).socketPath, "/y/s.sock", "socketPath beats the environment");
  assert.throws(() => client({ host: "ssh://a", socketPath: "/x" }), (e) => e.code === "INVALID_ARGUMENT");
  assert.throws(() => client({ context: "missing" }), (e) => e.code === "INVALID_ARGUMENT" && /no context "missing"/.test(e.message));
  ctl("context", "use", "default");
  assert.throws(() => lima({ host: "tcp://x" }), (e) => e.code === "INVALID_ARGUMENT");
});

test("a context file is read as strictly as agent-lanectl reads it", () => {
  const dir = path.join(home, ".agent-lane", "contexts");
  ctl("context", "create", "strict", "--host", `unix://${daemon.socketPath}`);
  const file = path.join(dir, "strict");
  fs.chmodSync(file, 0o666);
  assert.throws(() => client({ context: "strict" }), (e) => e.code === "INVALID_ARGUMENT" && /writable by others/.test(e.message));
  fs.chmodSync(file, 0o600);
  assert.throws(() => parseContext("x", "host=ssh://a\nport=22\n"), /unknown key/);
  assert.throws(() => parseContext("x", "host=ssh://a\nhost=ssh://b\n"), /twice/);
  assert.throws(() => parseContext("x", "host=ssh://a"), /no newline/);
  assert.throws(() => parseContext("x", "description=\u001b[2J\nhost=ssh://a\n"), /not printable/);
  assert.throws(() => parseContext("x", "# c\n"), /no host/);
  assert.equal(parseContext("x", "# c\nhost=ssh://a\nremote-command=/opt/homebrew/bin/agent-lanectl\n").remoteCommand, "/opt/homebrew/bin/agent-lanectl");
  // The same URLs as libagentlane's (tests/unit/test_context.c).
  assert.deepEqual(parseHost("ssh://me@mac.local:2222"), { kind: "ssh", user: "me", host: "mac.local", port: 2222, url: "ssh://me@mac.local:2222" });
  for (const bad of ["ssh://-oProxyCommand=x", "ssh://u@-h", "ssh://h/path", "ssh://h:0", "ssh://h;rm", "unix://rel", "ssh://[::1"]) {
    assert.throws(() => parseHost(bad), `${bad} is refused`);
  }
});

test("ssh inherits only what it needs: no secret's value, whatever its name", () => {
  const value = "sk-ant-value";
  const env = {
    HOME: "/h", PATH: "/usr/bin", SSH_AUTH_SOCK: "/a.sock", LANG: "C.UTF-8", LC_CTYPE: "C",
    ANTHROPIC_API_KEY: value, LC_TOKEN: value, GH_TOKEN: value, AWS_PROFILE: "dev", AL_SSH_CONFIG: "/c",
  };
  assert.deepEqual(sshEnv(env), { HOME: "/h", PATH: "/usr/bin", SSH_AUTH_SOCK: "/a.sock", LANG: "C.UTF-8", LC_CTYPE: "C" });
  // What the user names for its ssh configuration goes too (a ProxyCommand's AWS_PROFILE).
  assert.deepEqual(sshEnv({ ...env, AGENT_LANE_SSH_ENV: " AWS_PROFILE,AL_SSH_CONFIG " }), {
    HOME: "/h", PATH: "/usr/bin", SSH_AUTH_SOCK: "/a.sock", LANG: "C.UTF-8", LC_CTYPE: "C", AWS_PROFILE: "dev", AL_SSH_CONFIG: "/c",
  });
  assert.ok(!Object.values(sshEnv()).includes(undefined));
});
