// Lane lifecycle through the provider: resources and timeouts requested at
// create(), cleanup when create() fails, and close().
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createLaneHandle, AgentLaneError } from "../dist/index.js";
import { useDaemon, hostCommandLines, tempDirs, waitFor, sleep } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();

before(() => daemon.start());

/** Lanes (any state) carrying label `test=<value>`. */
async function lanesLabelled(value) {
  const all = await daemon.client.listLanes(true);
  return all.filter((l) => l.labels.some((lb) => lb.key === "test" && lb.value === value));
}

// A duration no other test or concurrent run uses, so the host-wide process
// scan only ever finds this test's own sleeper.
const SLEEP_ARG = `300.${process.pid}${Date.now() % 1000}`;
function sleepers() {
  const needle = Buffer.from(`sleep\u0000${SLEEP_ARG}\u0000`);
  return hostCommandLines().filter((p) => p.cmdline.equals(needle));
}

test("create() passes resources, lifetime and idle timeout to the daemon; execTimeoutMs and maxCopyOutBytes apply", async () => {
  const h = await createLaneHandle(
    {
      socketPath: daemon.socketPath,
      cpus: 1,
      memoryGiB: 1.5,
      diskGiB: 10,
      timeoutMinutes: 2,
      idleTimeoutMinutes: 1,
      // Every exec of this handle gets it: 700 ms was passed by plain
      // execs on a loaded 2-core machine; 2 s still cuts `sleep 5` short.
      execTimeoutMs: 2000,
      maxCopyOutBytes: 1000,
      labels: { test: "resources" },
    },
    { env: {} },
  );
  daemon.cleanup(() => h.close());
  const lane = await daemon.client.getLane(h.laneName);
  assert.equal(lane.cpus, 1);
  assert.equal(lane.memoryMib, 1536);
  assert.equal(lane.diskGib, 10);
  assert.equal(lane.deadlineMs - lane.createdAtMs, 120_000);
  assert.equal(lane.idleTimeoutS, 60);

  const t0 = Date.now();
  await assert.rejects(h.exec("sleep 5"), (err) => err instanceof AgentLaneError && err.code === "DEADLINE_EXCEEDED");
  assert.ok(Date.now() - t0 < 4500, "the exec timeout did not apply");
  assert.equal((await h.exec("echo quick")).stdout, "quick\n");

  const hostDir = tmpdir();
  await h.exec("head -c 5000 /dev/zero > big.bin; head -c 1000 /dev/zero > fits.bin");
  await assert.rejects(
    h.copyFileOut(`${h.worktreePath}/big.bin`, path.join(hostDir, "big.bin")),
    (err) => err instanceof AgentLaneError && err.code === "TOO_LARGE",
  );
  assert.deepEqual(fs.readdirSync(hostDir), []);
  await h.copyFileOut(`${h.worktreePath}/fits.bin`, path.join(hostDir, "fits.bin"));
  assert.equal(fs.statSync(path.join(hostDir, "fits.bin")).size, 1000);

  // sudo runs the command through sudo -n, which a lane without --sudo
  // refuses as sudo does without a password (the sudo lane: below).
  const s = await h.exec("id -u", { sudo: true });
  assert.deepEqual(s, { stdout: "", stderr: "sudo: a password is required\n", exitCode: 1 });
});

test("sudo: true keeps guest root, and exec({ sudo }) runs as root there", async () => {
  const h = await createLaneHandle({ socketPath: daemon.socketPath, sudo: true, labels: { test: "sudo" } }, { env: {} });
  daemon.cleanup(() => h.close());
  assert.equal(h.lane.sudo, true);
  assert.deepEqual(await h.exec("id -u", { sudo: true }), { stdout: "0\n", stderr: "", exitCode: 0 });
  const plain = await h.exec("id -u");
  assert.equal(plain.exitCode, 0);
  assert.match(plain.stdout, /^[1-9][0-9]*\n$/, "without sudo, the lane user");
});

test("close() kills in-flight execs, stops onLine, destroys the lane and is idempotent", async () => {
  const h = await createLaneHandle({ socketPath: daemon.socketPath, labels: { test: "close" } }, { env: {} });
  const sleeperLines = [];
  const ticks = [];
  const sleeper = h.exec(`echo started; sleep ${SLEEP_ARG}`, { onLine: (l) => sleeperLines.push(l) });
  const ticker = h.exec("while :; do echo tick; sleep 0.02; done", { onLine: (l) => ticks.push(l) });
  sleeper.catch(() => undefined);
  ticker.catch(() => undefined);
  await waitFor(() => sleeperLines.length === 1 && ticks.length > 3, { what: "both commands to run" });
  await waitFor(() => sleepers().length > 0, { what: "the sleeper process" });

  const t0 = Date.now();
  const closing = [h.close(), h.close()];
  const ticksAtClose = ticks.length;
  await Promise.all(closing);
  assert.ok(Date.now() - t0 < 10_000);
  assert.equal(h.closed, true);

  await assert.rejects(sleeper, AgentLaneError);
  await assert.rejects(ticker, AgentLaneError);
  const lane = await daemon.client.getLane(h.laneName);
  assert.equal(lane.state, "DESTROYED");
  assert.equal(lane.owned, true);
  // By close()'s own DestroyLane, not by the owner's end that follows it.
  const events = (await daemon.client.getEvents(h.laneName)).map((e) => `${e.event} ${e.detail}`);
  assert.ok(events.some((e) => /destroyed on request/.test(e)), events.join("\n"));
  assert.equal(sleepers().length, 0, "the sleeper still runs after close()");
  await sleep(300);
  assert.equal(ticks.length, ticksAtClose, "onLine was called after close()");

  await h.close();
  await assert.rejects(h.exec("true"), (err) => err instanceof AgentLaneError && err.code === "CANCELLED");
  await assert.rejects(h.copyIn(import.meta.filename ?? new URL(import.meta.url).pathname, "/tmp/x"), AgentLaneError);
});

test("create() destroys the lane when the guest check fails", async () => {
  // A PATH without git makes the prerequisite check fail after the lane is READY.
  await assert.rejects(
    createLaneHandle({ socketPath: daemon.socketPath, labels: { test: "probe-fails" } }, { env: { PATH: "/nonexistent" } }),
    (err) => err instanceof AgentLaneError && err.code === "FAILED_PRECONDITION" && /git/.test(err.message),
  );
  const lanes = await lanesLabelled("probe-fails");
  assert.equal(lanes.length, 1);
  assert.equal(lanes[0].state, "DESTROYED");
});

test("create() rejects with the daemon's typed error and leaves no lane", async () => {
  await assert.rejects(
    createLaneHandle({ socketPath: daemon.socketPath, cpus: 4096, labels: { test: "too-big" } }, { env: {} }),
    (err) => err instanceof AgentLaneError && err.code === "RESOURCE_EXHAUSTED",
  );
  const live = (await lanesLabelled("too-big")).filter((l) => !["DESTROYED", "FAILED"].includes(l.state));
  assert.deepEqual(live, []);
  await assert.rejects(
    createLaneHandle({ socketPath: path.join(tmpdir(), "no.sock") }, { env: {} }),
    (err) => err instanceof AgentLaneError && err.code === "UNAVAILABLE",
  );
  await assert.rejects(
    createLaneHandle({ socketPath: daemon.socketPath }, { env: { "BAD-NAME": "x" } }),
    (err) => err instanceof AgentLaneError && err.code === "INVALID_ARGUMENT",
  );
});
