// End to end with a secret: the real createSandbox() of @ai-hero/sandcastle
// with lima({ secrets: { ANTHROPIC_API_KEY: ["api.anthropic.com"] } }) and a
// fake `claude` that uses $ANTHROPIC_API_KEY. The run's commit comes back,
// and what the guest saw (its environment, every process's) holds the
// placeholder, never the key.
//
// The HTTPS half needs guests with a network: the fake claude calls
// https://api.anthropic.com through the lane's proxy, which the test daemon
// (build/tests/agent-laned-test) resolves to a loopback upstream with its own
// test CA (AGENT_LANED_TEST_RESOLVE, AGENT_LANED_TEST_TRUST); the upstream
// must see the real key. The simulator's guests have no network, so that
// half runs on real Lima only (make check-lima: tests/lima/sandcastle.sh).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import https from "node:https";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createSandbox } from "@ai-hero/sandcastle";
import { useDaemon, tempDirs, testDaemonBin, daemonBin, realGuests, sandboxFor } from "../test-support/harness.mjs";

const tmpdir = tempDirs();
const certs = tmpdir("/tmp/alc-");
const openssl = (...args) => execFileSync("openssl", args, { cwd: certs, stdio: ["ignore", "ignore", "pipe"] });

// A test CA and a leaf for api.anthropic.com: what the loopback upstream shows
// the proxy, which trusts only this CA (the test daemon's trust override).
openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
  "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=agent-lane test upstream CA",
  "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
  "-keyout", "up.key", "-out", "up.csr", "-subj", "/CN=api.anthropic.com");
fs.writeFileSync(
  path.join(certs, "ext.cnf"),
  "subjectAltName=DNS:api.anthropic.com\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n",
);
openssl("x509", "-req", "-in", "up.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
  "-out", "up.pem", "-days", "2", "-extfile", "ext.cnf");

/** What the upstream saw: one entry a request. */
const seen = [];
const upstream = https.createServer(
  { key: fs.readFileSync(path.join(certs, "up.key")), cert: fs.readFileSync(path.join(certs, "up.pem")) },
  (req, res) => {
    seen.push({ method: req.method, url: req.url, host: req.headers.host, apiKey: req.headers["x-api-key"] });
    req.resume();
    req.on("end", () => {
      // Never an echo of what came in: a response reaches the guest as it is.
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"type":"message","content":[{"type":"text","text":"hello from the test upstream"}]}\n');
    });
  },
);
await new Promise((resolve) => upstream.listen(0, "127.0.0.1", resolve));
const upstreamPort = upstream.address().port;
after(() => upstream.close());

const bin = fs.existsSync(testDaemonBin) ? testDaemonBin : daemonBin;
const daemon = useDaemon({
  bin,
  extraArgs: ["--proxy-connect-ports", String(upstreamPort)],
  env: {
    AGENT_LANED_TEST_RESOLVE: "api.anthropic.com=127.0.0.1",
    AGENT_LANED_TEST_TRUST: path.join(certs, "ca.pem"),
  },
});
before(() => daemon.start());

const git = (cwd, ...args) => execFileSync("git", args, { cwd, encoding: "utf8" });

/**
 * The fake `claude`: records what it was given (the key variable, its whole
 * environment and every process's), calls the API when the guest has a
 * network, and commits it all.
 */
const fakeClaude = (callApi) => ({
  name: "fake-claude",
  env: {},
  captureSessions: false,
  buildPrintCommand: () => ({
    command: [
      "set -e",
      "printf '%s\\n' \"$ANTHROPIC_API_KEY\" > key-seen.txt",
      "env > guest-env.txt",
      "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' >> guest-env.txt || true",
      ...(callApi
        ? [
            `curl -sS --fail-with-body -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' \\`,
            `  -d '{"model":"claude-test","max_tokens":1}' https://api.anthropic.com:${upstreamPort}/v1/messages > reply.txt`,
          ]
        : []),
      "git add -A",
      "git commit -q -m 'fake claude: used the key'",
      'echo "fake claude: done"',
    ].join("\n"),
    stdin: "",
  }),
  parseStreamLine: (line) => [{ type: "text", text: line }],
});

async function runWithSecret(callApi) {
  const key = `sk-ant-api03-${randomBytes(24).toString("hex")}`;
  const hostRepo = tmpdir("/tmp/alr-");
  git(hostRepo, "init", "-q", "-b", "main");
  git(hostRepo, "config", "user.name", "Lane Tester");
  git(hostRepo, "config", "user.email", "lane-tester@example.com");
  fs.writeFileSync(path.join(hostRepo, "README.md"), "# test repo\n");
  git(hostRepo, "add", "README.md");
  git(hostRepo, "commit", "-q", "-m", "init");

  const sandbox = await createSandbox({
    branch: "agent/secret",
    cwd: hostRepo,
    sandbox: await sandboxFor({
      timeoutMinutes: 20,
      socketPath: daemon.socketPath,
      labels: { test: "secrets-e2e" },
      secrets: { ANTHROPIC_API_KEY: ["api.anthropic.com"] },
      env: {
        ANTHROPIC_API_KEY: key,
        GIT_AUTHOR_NAME: "Fake Claude",
        GIT_AUTHOR_EMAIL: "claude@example.com",
        GIT_COMMITTER_NAME: "Fake Claude",
        GIT_COMMITTER_EMAIL: "claude@example.com",
      },
    }),
  });
  let closed = false;
  daemon.cleanup(() => (closed ? undefined : sandbox.close()));
  const lanes = (await daemon.client.listLanes(false)).filter((l) => l.labels.some((lb) => lb.value === "secrets-e2e"));
  assert.equal(lanes.length, 1);
  assert.deepEqual(lanes[0].secrets, [{ name: "ANTHROPIC_API_KEY", hosts: ["api.anthropic.com"], headers: [] }]);

  const result = await sandbox.run({
    agent: fakeClaude(callApi),
    prompt: "use the key",
    maxIterations: 1,
    logging: { type: "file", path: path.join(tmpdir(), "run.log") },
  });
  assert.equal(result.commits.length, 1, "the run's commit comes back");
  assert.match(result.stdout, /fake claude: done/);
  const show = (file) => git(hostRepo, "show", `agent/secret:${file}`);
  assert.match(show("key-seen.txt"), /^AGENTLANE_SECRET_[0-9a-f]{48}\n$/, "the guest saw the placeholder");
  assert.ok(!show("guest-env.txt").includes(key), "no process in the guest had the key");
  assert.ok(!result.stdout.includes(key), "nor did anything it printed");
  await sandbox.close();
  closed = true;
  return { key, reply: callApi ? show("reply.txt") : "" };
}

test("a secret in a Sandcastle run: the commit comes back; the guest saw only the placeholder", async () => {
  await runWithSecret(false);
});

test(
  "a fake claude's HTTPS call through the lane's proxy: the upstream sees the real key, the guest never does",
  {
    skip: realGuests
      ? false
      : "the simulator's guests have no network; it runs on real Lima (make check-lima: tests/lima/sandcastle.sh)",
  },
  async () => {
    seen.length = 0;
    const { key, reply } = await runWithSecret(true);
    assert.match(reply, /hello from the test upstream/);
    assert.equal(seen.length, 1, "one request reached the upstream");
    assert.equal(seen[0].apiKey, key, "with the real key in x-api-key");
    assert.equal(seen[0].url, "/v1/messages");
  },
);
