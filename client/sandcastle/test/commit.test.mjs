// Prepare once, fan out: a lane's disk committed through the provider
// (handle.commit, commit({ lane })) becomes an image that lima({ image })
// starts more lanes from, with what the first lane wrote.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createLaneHandle, commit } from "../dist/index.js";
import { useDaemon, bootRoom } from "../test-support/harness.mjs";

const daemon = useDaemon();

before(() => daemon.start());

test("handle.commit(): lanes from the image see what the prepared lane wrote", async () => {
  const prep = await createLaneHandle({ name: "prep", socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom });
  daemon.cleanup(() => (prep.closed ? undefined : prep.close()));
  assert.equal((await prep.exec("echo prepared > prepared.txt", { cwd: prep.workspace })).exitCode, 0);

  const img = await prep.commit("prepared");
  assert.equal(img.name, "prepared");
  assert.equal(img.committedFrom, prep.laneName);
  assert.equal(img.committedAlias, "prep");
  assert.ok(img.committedAtMs > 0);
  // The prepared lane is usable again once commit() resolves.
  assert.equal((await prep.exec("cat prepared.txt", { cwd: prep.workspace })).stdout, "prepared\n");

  const fan = await Promise.all([1, 2].map(() =>
    createLaneHandle({ image: "prepared", socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom })));
  for (const h of fan) {
    daemon.cleanup(() => (h.closed ? undefined : h.close()));
    const r = await h.exec("cat prepared.txt", { cwd: h.workspace });
    assert.equal(r.stdout, "prepared\n", `${h.laneName} sees the prepared file`);
  }
  assert.notEqual(fan[0].laneName, fan[1].laneName);
  await Promise.all(fan.map((h) => h.close()));

  // By alias, without the handle, and --no-workspace.
  const bare = await commit({ lane: "prep", image: "prepared-bare", noWorkspace: true, socketPath: daemon.socketPath });
  assert.equal(bare.committedFrom, prep.laneName);
  const h = await createLaneHandle({ image: "prepared-bare", socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom });
  daemon.cleanup(() => (h.closed ? undefined : h.close()));
  assert.notEqual((await h.exec("test -e prepared.txt", { cwd: h.workspace })).exitCode, 0);
  await h.close();

  await assert.rejects(prep.commit("prepared"), (e) => e.code === "ALREADY_EXISTS");
  await prep.close();
  await assert.rejects(prep.commit("again"), (e) => e.code === "CANCELLED");
  for (const name of ["prepared", "prepared-bare"]) await daemon.client.removeImage(name);
});
