// create() bounded by createTimeoutMs: with a guest that never boots, the
// wait is abandoned, and the lane the daemon already registered is
// destroyed.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createLaneHandle, AgentLaneError } from "../dist/index.js";
import { useDaemon, waitFor } from "../test-support/harness.mjs";

// The first `limactl start` hangs, VM running, until it is killed: only
// the timeout can end this create().
const daemon = useDaemon({ env: { LIMA_SIM_HANG: "start" } });

before(() => daemon.start());

test("create() that passes createTimeoutMs gives up and destroys the lane it started", { timeout: 60_000 }, async () => {
  const t0 = Date.now();
  await assert.rejects(
    createLaneHandle({ socketPath: daemon.socketPath, labels: { test: "create-timeout" }, createTimeoutMs: 1200 }, { env: {} }),
    (err) => err instanceof AgentLaneError && err.code === "DEADLINE_EXCEEDED" && /1200 ms/.test(err.message),
  );
  assert.ok(Date.now() - t0 >= 1200, "create() gave up before its timeout");
  const labelled = async () =>
    (await daemon.client.listLanes(true)).filter((l) => l.labels.some((lb) => lb.key === "test" && lb.value === "create-timeout"));
  let seen = [];
  await waitFor(
    async () => {
      seen = await labelled();
      return seen.length === 1 && ["DESTROYED", "FAILED"].includes(seen[0].state);
    },
    { timeoutMs: 15_000, what: "the abandoned lane to be destroyed" },
  ).catch((err) => {
    err.message += `: ${JSON.stringify(seen.map((l) => ({ name: l.name, state: l.state, error: l.error })))}`;
    throw err;
  });
  const events = (await daemon.client.getEvents(seen[0].name)).map((e) => e.event);
  // It was abandoned while booting: the VM existed, it never became ready.
  assert.ok(events.includes("vm-created"), events.join(","));
  assert.ok(events.includes("destroy-requested") || events.includes("destroying"), events.join(","));
  assert.ok(!events.includes("ready"), `the lane became ready before it was destroyed: ${events.join(",")}`);
});
