// create() bounded by createTimeoutMs: with a slow-booting guest the wait is
// abandoned, and the lane the daemon already registered is destroyed.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createLaneHandle, AgentLaneError } from "../dist/index.js";
import { useDaemon, waitFor } from "../test-support/harness.mjs";

// Each simulated guest takes 3 s to boot on this daemon.
const daemon = useDaemon({ env: { LIMA_SIM_BOOT_MS: "3000" } });

before(() => daemon.start());

test("create() that passes createTimeoutMs gives up and destroys the lane it started", async () => {
  const t0 = Date.now();
  await assert.rejects(
    createLaneHandle({ socketPath: daemon.socketPath, labels: { test: "create-timeout" }, createTimeoutMs: 1200 }, { env: {} }),
    (err) => err instanceof AgentLaneError && err.code === "DEADLINE_EXCEEDED",
  );
  const took = Date.now() - t0;
  assert.ok(took < 2500, `create() took ${took} ms despite createTimeoutMs 1200`);
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
  assert.ok(events.includes("destroy-requested") || events.includes("destroying"), events.join(","));
  assert.ok(!events.includes("ready"), `the lane became ready before it was destroyed: ${events.join(",")}`);
});
