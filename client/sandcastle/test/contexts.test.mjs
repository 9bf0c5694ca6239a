// Which daemon the provider reaches (issue 19): as agent-lanectl decides it,
// from the same context files that agent-lanectl writes (read with the same
// strict rules), against the real daemon and the limactl simulator.
import { test, before } from "node:test";
import { fileURLToPath } from "node:url";
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
  // The contents' rules: tests/vectors/contexts.tsv, below.
});

const vectors = (name) =>
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "tests", "vectors", name);

/** A vector file's escapes (\n \r \t \\ \xHH) into bytes, read as a context file is (UTF-8). */
function unescape(s) {
  const out = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "\\") { out.push(...Buffer.from(s[i])); continue; }
    const c = s[++i];
    if (c === "x") { out.push(parseInt(s.slice(i + 1, i + 3), 16)); i += 2; }
    else out.push({ n: 10, r: 13, t: 9, "\\": 92 }[c]);
  }
  return Buffer.from(out).toString("utf8");
}

// tests/vectors/contexts.tsv: the same files libagentlane's
// tests/unit/test_context.c reads, with the same answers.
test("context files: the shared vectors, as libagentlane reads them", () => {
  let ok = 0, refused = 0;
  for (const line of fs.readFileSync(vectors("contexts.tsv"), "utf8").split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const f = line.split("\t");
    const text = unescape(f[1]);
    if (f[0] === "refused") {
      assert.throws(() => parseContext("x", text), `accepted (${f[2]}): ${f[1]}`);
      refused++;
      continue;
    }
    assert.equal(f[0], "ok", line);
    const c = parseContext("x", text);
    const want = f.slice(2, 5).map((x) => (x === "-" ? "" : unescape(x)));
    assert.deepEqual([c.host, c.description, c.remoteCommand], want, f[1]);
    ok++;
  }
  assert.ok(ok >= 3 && refused >= 14);
});

// tests/vectors/hosts.tsv: the same host URLs libagentlane's
// tests/unit/test_context.c reads, with the same answers.
test("host URLs: the shared vectors, as libagentlane parses them", () => {
  const file = vectors("hosts.tsv");
  let ok = 0, refused = 0;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const f = line.split("\t").map((x) => (x === "-" ? "" : x));
    if (f.length === 2 && f[1] === "refused") {
      assert.throws(() => parseHost(f[0]), `${f[0]} is refused`);
      refused++;
    } else if (f.length === 7 && f[1] === "ok") {
      const want = f[2] === "ssh"
        ? { kind: "ssh", user: f[3], host: f[4], port: Number(f[5]), url: f[6] }
        : { kind: "unix", path: f[4], url: f[6] };
      assert.deepEqual(parseHost(f[0]), want, f[0]);
      ok++;
    } else assert.fail(`${file}: a line that is neither ok nor refused: ${line}`);
  }
  assert.ok(ok >= 5 && refused >= 20);
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
