// AGENT_LANE_PROVIDER_TRACE=1 (docs/performance.md): one stderr line per
// provider call with its kind and time, a summary at close(), and never a
// value of the environment. Without it, nothing is printed.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createLaneHandle } from "../dist/index.js";
import { useDaemon, tempDirs } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();

/** What fn writes to stderr through process.stderr.write. */
async function stderrOf(fn) {
  const seen = [];
  const write = process.stderr.write;
  process.stderr.write = (chunk, ...rest) => {
    seen.push(String(chunk));
    return write.call(process.stderr, chunk, ...rest);
  };
  try {
    await fn();
  } finally {
    process.stderr.write = write;
  }
  return seen.join("").split("\n").filter((l) => l.startsWith("agent-lane trace:"));
}

async function someCalls(dir) {
  const h = await createLaneHandle({ socketPath: daemon.socketPath }, { env: { TRACE_SECRET: "do-not-print-me" } });
  try {
    assert.equal((await h.exec("echo one")).stdout, "one\n");
    fs.writeFileSync(path.join(dir, "f"), "x\n");
    await h.copyIn(path.join(dir, "f"), "/tmp/traced-f");
    await h.copyFileOut("/tmp/traced-f", path.join(dir, "back"));
  } finally {
    await h.close();
  }
  return h.laneName;
}

test("with AGENT_LANE_PROVIDER_TRACE=1 every call is a line with its time, and close() sums them up", async () => {
  process.env.AGENT_LANE_PROVIDER_TRACE = "1";
  let lane;
  let lines;
  try {
    lines = await stderrOf(async () => (lane = await someCalls(tmpdir())));
  } finally {
    delete process.env.AGENT_LANE_PROVIDER_TRACE;
  }
  assert.match(lines[0], new RegExp(`^agent-lane trace: ${lane} create \\(lane ready\\) [0-9.]+ ms$`));
  // #1 is create()'s own check of the guest, then the calls made here.
  assert.match(lines[1], new RegExp(`^agent-lane trace: ${lane} #1 exec [0-9.]+ ms "missing=`));
  assert.match(lines[2], new RegExp(`^agent-lane trace: ${lane} #2 exec [0-9.]+ ms \\(first output [0-9.]+ ms\\) "echo one"$`));
  assert.match(lines[3], new RegExp(`^agent-lane trace: ${lane} #3 copyIn [0-9.]+ ms ".*/f" -> "/tmp/traced-f"$`));
  assert.match(lines[4], new RegExp(`^agent-lane trace: ${lane} #4 copyFileOut [0-9.]+ ms "/tmp/traced-f"$`));
  assert.match(lines[5], new RegExp(`^agent-lane trace: ${lane} 4 calls in [0-9]+ ms since ready: exec 2x [0-9]+ ms, copyIn 1x [0-9]+ ms, copyFileOut 1x [0-9]+ ms$`));
  assert.equal(lines.length, 6);
  assert.ok(!lines.join("\n").includes("do-not-print-me"));
});

test("without it, the provider prints nothing", async () => {
  assert.deepEqual(await stderrOf(() => someCalls(tmpdir())), []);
});
