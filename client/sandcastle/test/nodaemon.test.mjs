// Issue 31, defect 12: with no daemon, create() fails with one error, the
// connection's, not a second "cleaning up the lane failed" for a lane that
// never existed.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { tmpdir } from "node:os";
import { createLaneHandle, AgentLaneError } from "../dist/index.js";

const dir = fs.mkdtempSync(path.join(tmpdir(), "al-nodaemon-"));
const sock = path.join(dir, "agent-laned.sock");
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

function oneError(err) {
  assert.ok(err instanceof AgentLaneError, `not an AgentLaneError: ${err}`);
  assert.equal(err.code, "UNAVAILABLE");
  assert.match(err.message, /cannot connect to agent-laned at .*is agent-laned running\?/);
  assert.doesNotMatch(err.message, /cleaning up/);
  assert.equal(err.message.match(/cannot connect/g).length, 1, err.message);
  return true;
}

test("no daemon: create() rejects with the connection's error alone", async () => {
  await assert.rejects(createLaneHandle({ socketPath: sock }, { env: {} }), oneError);
});

test("no daemon: a create with a provision script rejects with one error too", async () => {
  await assert.rejects(
    createLaneHandle({ socketPath: sock, provision: { name: "p.sh", script: "true\n" } }, { env: {} }),
    oneError,
  );
});
