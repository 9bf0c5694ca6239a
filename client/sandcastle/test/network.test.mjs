// Lane network policies through the provider: lima({ network, allow, sudo })
// reaches the daemon, the lane reports its policy, an allow lane's commands
// get the proxy variables, and bad options are refused before any call.
// The simulator's guests have no network, so the policy reads "unenforced"
// here (tests/lima/netpolicy.sh has the real guests).
import { test } from "node:test";
import assert from "node:assert/strict";
import { lima, createLaneHandle } from "../dist/index.js";
import { useDaemon } from "../test-support/harness.mjs";

const daemon = useDaemon();

test("lima({ network: 'allow', allow }): the lane's proxy and its environment", async () => {
  await daemon.start();
  const handle = await createLaneHandle({
    network: "allow",
    allow: ["registry.npmjs.org", "*.pypi.org"],
    socketPath: daemon.socketPath,
  });
  daemon.cleanup(() => (handle.closed ? undefined : handle.close()));
  assert.equal(handle.lane.network, "allow");
  assert.deepEqual(handle.lane.allow, ["registry.npmjs.org", "*.pypi.org"]);
  assert.equal(handle.lane.sudo, false);
  assert.ok(handle.lane.proxyPort > 0, "an allow lane has a proxy port");
  assert.equal(handle.lane.networkPolicy, "unenforced");
  assert.match(handle.lane.networkNote, /simulator/);
  const r = await handle.exec("env");
  assert.equal(r.exitCode, 0);
  assert.match(r.stdout, new RegExp(`^HTTPS_PROXY=http://192\\.168\\.5\\.2:${handle.lane.proxyPort}$`, "m"));
  const shown = await daemon.client.getLane(handle.laneName);
  assert.equal(shown.proxyPort, handle.lane.proxyPort);
  await handle.close();
});

test("lima({ network: 'none', sudo }) and the default policy", async () => {
  await daemon.start();
  const none = await createLaneHandle({ network: "none", socketPath: daemon.socketPath });
  daemon.cleanup(() => (none.closed ? undefined : none.close()));
  assert.equal(none.lane.network, "none");
  assert.deepEqual(none.lane.allow, []);
  assert.equal(none.lane.proxyPort, 0);
  assert.doesNotMatch((await none.exec("env")).stdout, /PROXY/);
  await none.close();

  const root = await createLaneHandle({ sudo: true, socketPath: daemon.socketPath });
  daemon.cleanup(() => (root.closed ? undefined : root.close()));
  assert.equal(root.lane.network, "internet", "the daemon's default");
  assert.equal(root.lane.sudo, true);
  assert.equal((await root.exec("sudo -n true")).exitCode, 0, "a sudo lane keeps guest root");
  await root.close();
});

test("lima(): network options are checked before any call", async () => {
  assert.throws(() => lima({ network: "open" }), /network must be "internet", "none" or "allow"/);
  assert.throws(() => lima({ allow: ["a.example.org"] }), /allow needs network: "allow"/);
  assert.throws(() => lima({ network: "allow", allow: Array(33).fill("a.example.org") }), /at most 32/);
  assert.throws(() => lima({ sudo: "yes" }), /sudo must be a boolean/);
  // The daemon's own check: a pattern too wide.
  await daemon.start();
  await assert.rejects(
    createLaneHandle({ network: "allow", allow: ["*.org"], socketPath: daemon.socketPath }),
    (e) => e.code === "INVALID_ARGUMENT" && /is not a host name/.test(e.message),
  );
});
