// Lane secrets through the provider: lima({ secrets }) turns the env entries
// it names (or process.env's) into secrets, so commands see a placeholder and
// never the value; the lane reports names, hosts and a secret's own headers
// (the long form { hosts, headers }); bad options are refused
// before any call; the value is on no file the daemon wrote and in no host
// command line. The HTTPS call through the proxy is secrets-e2e.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { lima, createLaneHandle, AgentLaneClient, DEFAULT_CREDENTIAL_HEADERS, secretHeaderValid } from "../dist/index.js";
import { useDaemon, hostCommandLines } from "../test-support/harness.mjs";

const daemon = useDaemon();
const PH = /^AGENTLANE_SECRET_[0-9a-f]{48}$/;
const value = (what) => `sk-${what}-${randomBytes(16).toString("hex")}`;

/** Every file under dir whose bytes hold needle. */
function filesWith(dir, needle) {
  const hits = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        try {
          if (fs.readFileSync(p).includes(needle)) hits.push(p);
        } catch {
          // a socket or a file gone meanwhile
        }
      }
    }
  };
  walk(dir);
  return hits;
}

test("lima({ secrets }): env entries named there become secrets; commands see placeholders", async () => {
  await daemon.start();
  const key = value("ant");
  const gh = value("gh");
  process.env.AL_TEST_GH_TOKEN = gh;
  try {
    const handle = await createLaneHandle(
      {
        secrets: { ANTHROPIC_API_KEY: ["api.anthropic.com"], AL_TEST_GH_TOKEN: ["github.com", "*.github.com"] },
        env: { ANTHROPIC_API_KEY: key, OTHER: "plain" },
        name: "sec-node",
        socketPath: daemon.socketPath,
      },
      { env: { FROM_SANDCASTLE: "yes" } },
    );
    daemon.cleanup(() => (handle.closed ? undefined : handle.close()));
    assert.deepEqual(handle.lane.secrets, [
      { name: "ANTHROPIC_API_KEY", hosts: ["api.anthropic.com"], headers: [] },
      { name: "AL_TEST_GH_TOKEN", hosts: ["github.com", "*.github.com"], headers: [] },
    ]);
    const env = (await handle.exec("env")).stdout;
    const seen = Object.fromEntries(env.split("\n").filter(Boolean).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    assert.match(seen.ANTHROPIC_API_KEY, PH, "the env entry became a secret");
    assert.match(seen.AL_TEST_GH_TOKEN, PH, "process.env's value too");
    assert.notEqual(seen.ANTHROPIC_API_KEY, seen.AL_TEST_GH_TOKEN);
    assert.equal(seen.OTHER, "plain", "other env entries still go");
    assert.equal(seen.FROM_SANDCASTLE, "yes", "and Sandcastle's own");
    assert.ok(!env.includes(key) && !env.includes(gh), "no command sees a value");
    assert.equal(seen.NODE_EXTRA_CA_CERTS, "/usr/local/share/ca-certificates/agent-lane.crt");
    assert.equal(seen.SSL_CERT_FILE, "/etc/ssl/certs/ca-certificates.crt");
    assert.match(seen.HTTPS_PROXY, /^http:\/\/192\.168\.5\.2:\d+$/);
    // By alias, the same environment.
    const byAlias = await daemon.client.getLane("sec-node");
    assert.deepEqual(byAlias.secrets, handle.lane.secrets);
    // Nothing the daemon wrote, no host command line.
    assert.deepEqual(filesWith(daemon.tmp, key), []);
    assert.deepEqual(filesWith(daemon.tmp, gh), []);
    assert.ok(!daemon.log().includes(key), "the daemon's log");
    assert.deepEqual(
      hostCommandLines().filter((p) => p.cmdline.includes(key) || p.cmdline.includes(gh)).map((p) => p.pid),
      [],
    );
    const events = await daemon.client.getEvents(handle.laneName);
    assert.ok(events.some((e) => e.event === "secret" && e.detail === "ANTHROPIC_API_KEY for api.anthropic.com"));
    assert.ok(!JSON.stringify(events).includes(key));
    await handle.close();
  } finally {
    delete process.env.AL_TEST_GH_TOKEN;
  }
});

test("lima({ secrets }): a name without a value, and bad options, are refused before any call", async () => {
  assert.throws(() => lima({ secrets: ["ANTHROPIC_API_KEY"] }), /secrets must map/);
  assert.throws(() => lima({ secrets: { "BAD-NAME": ["a.example.org"] } }), /is not \[A-Za-z_\]/);
  assert.throws(() => lima({ secrets: { K: "a.example.org" } }), /at most 16 host names/);
  assert.throws(() => lima({ secrets: { K: Array(17).fill("a.example.org") } }), /at most 16 host names/);
  const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`K${i}`, ["a.example.org"]]));
  assert.throws(() => lima({ secrets: many }), /at most 16 variable names/);
  delete process.env.AL_TEST_UNSET;
  await assert.rejects(
    createLaneHandle({ secrets: { AL_TEST_UNSET: ["a.example.org"] }, socketPath: "/nonexistent/sock" }),
    (e) => e.code === "INVALID_ARGUMENT" && /AL_TEST_UNSET has no value/.test(e.message),
  );
  await assert.rejects(
    createLaneHandle({ secrets: { K: ["a.example.org"] }, env: { K: "line\nbreak" }, socketPath: "/nonexistent/sock" }),
    (e) => e.code === "INVALID_ARGUMENT" && /printable ASCII/.test(e.message) && !e.message.includes("break"),
  );
  // The daemon's own check: a pattern too wide; nothing is left behind.
  await daemon.start();
  await assert.rejects(
    createLaneHandle({ secrets: { K: ["*.com"] }, env: { K: value("k") }, socketPath: daemon.socketPath }),
    (e) => e.code === "INVALID_ARGUMENT" && /is not a host name/.test(e.message),
  );
  // Hosts that can never work: an address, a public-suffix wildcard.
  await assert.rejects(
    createLaneHandle({ secrets: { K: ["127.1"] }, env: { K: value("k") }, socketPath: daemon.socketPath }),
    (e) => e.code === "INVALID_ARGUMENT" && /"127\.1" is an address, not a host name/.test(e.message),
  );
  await assert.rejects(
    createLaneHandle({ secrets: { K: ["*.github.io"] }, env: { K: value("k") }, socketPath: daemon.socketPath }),
    (e) => e.code === "INVALID_ARGUMENT" && /"\*\.github\.io" is a wildcard over the public suffix "github\.io"/.test(e.message),
  );
  assert.deepEqual(await daemon.client.listLanes(false), []);
});

test("lima({ secrets }): the long form names a secret's own headers; the lane lists them", async () => {
  await daemon.start();
  const tok = value("gl");
  const handle = await createLaneHandle(
    {
      secrets: {
        GITLAB_TOKEN: { hosts: ["gitlab.example.org"], headers: ["Job-Token", "X-Other", "job-token"] },
        ANTHROPIC_API_KEY: ["api.anthropic.com"],
        PLAIN: { hosts: ["plain.example.org"] },
      },
      env: { GITLAB_TOKEN: tok, ANTHROPIC_API_KEY: value("ant"), PLAIN: value("p") },
      socketPath: daemon.socketPath,
    },
    { env: {} },
  );
  daemon.cleanup(() => (handle.closed ? undefined : handle.close()));
  assert.deepEqual(handle.lane.secrets, [
    { name: "GITLAB_TOKEN", hosts: ["gitlab.example.org"], headers: ["job-token", "x-other"] },
    { name: "ANTHROPIC_API_KEY", hosts: ["api.anthropic.com"], headers: [] },
    { name: "PLAIN", hosts: ["plain.example.org"], headers: [] },
  ]);
  assert.deepEqual((await daemon.client.getLane(handle.laneName)).secrets, handle.lane.secrets, "getLane parses them back");
  const listed = (await daemon.client.listLanes(false)).find((l) => l.name === handle.laneName);
  assert.deepEqual(listed.secrets, handle.lane.secrets, "and listLanes");
  assert.match((await handle.exec("printenv GITLAB_TOKEN")).stdout.trim(), PH);
  const events = await daemon.client.getEvents(handle.laneName);
  assert.ok(events.some((e) => e.event === "secret" && e.detail === "GITLAB_TOKEN for gitlab.example.org in headers job-token,x-other"));
  await handle.close();
  const ended = await daemon.client.getLane(handle.laneName);
  assert.deepEqual(ended.secrets[0].headers, ["job-token", "x-other"], "a destroyed lane still lists them");
});

test("lima({ secrets }): bad headers are refused before any call, and by the daemon", async () => {
  const spec = (headers) => ({ secrets: { K: { hosts: ["a.example.org"], headers } } });
  for (const h of ["Host", "content-length", "Transfer-Encoding", "Connection", "Cookie", "x y", "x:y", "", "x".repeat(65)]) {
    assert.throws(() => lima(spec([h])), /cannot carry a credential/, `header ${JSON.stringify(h)}`);
  }
  assert.throws(() => lima(spec(Array.from({ length: 9 }, (_, i) => `h${i}`))), /at most 8 header names/);
  assert.throws(() => lima(spec("x-key")), /at most 8 header names/);
  assert.throws(() => lima({ secrets: { K: { hosts: ["a.example.org"], header: ["x"] } } }), /takes hosts and headers only/);
  assert.doesNotThrow(() => lima(spec(["x".repeat(64), "X-Custom-Key"])));
  assert.equal(secretHeaderValid("x-api-key"), true);
  assert.equal(secretHeaderValid("Set-Cookie"), false);
  assert.deepEqual([...DEFAULT_CREDENTIAL_HEADERS], ["authorization", "x-api-key", "api-key", "x-goog-api-key", "private-token", "x-auth-token"]);
  // A client that does not check: the daemon refuses, and nothing is left.
  await daemon.start();
  const client = new AgentLaneClient({ socketPath: daemon.socketPath });
  const v = value("raw");
  await assert.rejects(
    client.createLane({ secrets: [{ name: "K", value: v, hosts: ["a.example.org"], headers: ["Content-Length"] }] }),
    (e) => e.code === "INVALID_ARGUMENT" && /header "Content-Length" cannot carry a credential/.test(e.message) && !e.message.includes(v),
  );
  assert.deepEqual(await daemon.client.listLanes(false), []);
});
