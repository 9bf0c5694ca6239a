// A daemon announcing the smallest frame cap (--max-frame-bytes 4096): the
// provider sizes its data chunks from the hello, so copy-in and stdin-fed
// exec work (they failed with TOO_LARGE when chunks were a fixed 64 KiB).
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { useDaemon } from "../test-support/harness.mjs";

const daemon = useDaemon({ extraArgs: ["--max-frame-bytes", "4096"] });
let client;
let lane;
const blob = crypto.randomBytes(300000);
const sha = crypto.createHash("sha256").update(blob).digest("hex");

before(async () => {
  await daemon.start();
  client = daemon.client;
  lane = await client.createLane({ labels: [{ key: "test", value: "smallframes" }] });
  daemon.cleanup(() => client.destroyLane(lane.name));
});

test("the hello announces the 4096-byte cap", async () => {
  assert.equal((await client.hello()).limits.maxFrameBytes, 4096);
});

test("stdin-fed exec under a 4096-byte frame cap", async () => {
  const out = [];
  const st = await client.exec({ lane: lane.name, argv: ["sha256sum"], stdin: blob }, { onStdout: (b) => out.push(b) }).done;
  assert.deepEqual(st, { code: 0 });
  assert.equal(Buffer.concat(out).toString().split(" ")[0], sha);
});

test("copy-in under a 4096-byte frame cap", async () => {
  const dir = path.join(daemon.tmp, "src");
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, "blob"), blob);
  const tar = spawnSync("tar", ["-c", "-f", "-", "-C", dir, "blob"], { maxBuffer: 1 << 24 });
  assert.equal(tar.status, 0);
  async function* stream() {
    yield tar.stdout;
  }
  await client.copyIn(lane.name, `${lane.workspace}/small`, stream());
  const out = [];
  const st = await client.exec(
    { lane: lane.name, shell: `sha256sum < ${lane.workspace}/small/blob` },
    { onStdout: (b) => out.push(b) },
  ).done;
  assert.deepEqual(st, { code: 0 });
  assert.equal(Buffer.concat(out).toString().split(" ")[0], sha);
});
