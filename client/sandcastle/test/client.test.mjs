// The daemon client on its own: hello, typed errors, streaming with a slow
// consumer, copy-in failures. Against the real agent-laned.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import os from "node:os";
import path from "node:path";
import { AgentLaneClient, AgentLaneError, defaultSocketPath } from "../dist/client.js";
import { useDaemon } from "../test-support/harness.mjs";

const daemon = useDaemon();
let client;
let lane;

before(async () => {
  await daemon.start();
  client = daemon.client;
  lane = await client.createLane({ labels: [{ key: "test", value: "client" }] });
  daemon.cleanup(() => client.destroyLane(lane.name));
});

test("the default socket is $AGENT_LANE_SOCKET, else ~/.agent-lane/run/agent-laned.sock", () => {
  const saved = process.env.AGENT_LANE_SOCKET;
  try {
    process.env.AGENT_LANE_SOCKET = "/tmp/custom.sock";
    assert.equal(defaultSocketPath(), "/tmp/custom.sock");
    assert.equal(new AgentLaneClient().socketPath, "/tmp/custom.sock");
    delete process.env.AGENT_LANE_SOCKET;
    assert.equal(defaultSocketPath(), path.join(os.homedir(), ".agent-lane", "run", "agent-laned.sock"));
  } finally {
    if (saved === undefined) delete process.env.AGENT_LANE_SOCKET;
    else process.env.AGENT_LANE_SOCKET = saved;
  }
});

test("hello reports protocol 1 and the daemon's limits", async () => {
  const h = await client.hello();
  assert.equal(h.protocolVersion, 1);
  assert.ok(h.limits.maxFrameBytes > 0 && h.limits.maxFrameBytes <= 1024 * 1024);
  assert.ok(h.limits.maxLanes > 0);
});

test("a created lane is READY with a workspace, and listed", async () => {
  assert.equal(lane.state, "READY");
  assert.match(lane.name, /^al-[0-9a-f]{16}$/);
  assert.ok(lane.workspace.startsWith("/"));
  const names = (await client.listLanes()).map((l) => l.name);
  assert.ok(names.includes(lane.name));
});

test("a lane created with an alias is found by it, and the alias is unique", async () => {
  const named = await client.createLane({ alias: "node-named" });
  try {
    assert.equal(named.alias, "node-named");
    assert.equal((await client.getLane("node-named")).name, named.name);
    await assert.rejects(client.createLane({ alias: "node-named" }), (e) => e instanceof AgentLaneError && e.code === "ALREADY_EXISTS");
  } finally {
    await client.destroyLane(named.name);
  }
});

test("daemon errors surface as AgentLaneError with the ErrorCode name", async () => {
  await assert.rejects(client.getLane("al-0000000000000000"), (e) => e instanceof AgentLaneError && e.code === "NOT_FOUND");
  // "not-a-lane" could be an alias (create --name): nobody has it.
  await assert.rejects(client.getLane("not-a-lane"), (e) => e instanceof AgentLaneError && e.code === "NOT_FOUND");
  await assert.rejects(client.getLane("Not a lane!"), (e) => e instanceof AgentLaneError && e.code === "INVALID_ARGUMENT");
  await assert.rejects(
    client.exec({ lane: lane.name, shell: "true", env: { BIG: "x".repeat(400 * 1024) } }).done,
    (e) => e instanceof AgentLaneError && e.code === "TOO_LARGE",
  );
  await assert.rejects(
    client.exec({ lane: lane.name, shell: "true", argv: ["true"] }).done,
    (e) => e instanceof AgentLaneError && e.code === "INVALID_ARGUMENT",
  );
});

test("exec output reaches a slow consumer complete and in order", async () => {
  const block = Buffer.from(Array.from({ length: 251 * 1000 }, (_, i) => i % 251));
  const expected = Buffer.concat(Array.from({ length: 25 }, () => block));
  const chunks = [];
  let calls = 0;
  const st = await client.exec(
    {
      lane: lane.name,
      shell: `perl -e 'binmode STDOUT; my $b = pack("C*", map { $_ % 251 } 0..250999); print $b for 1..25'`,
    },
    {
      onStdout: async (b) => {
        chunks.push(b);
        if (calls++ % 4 === 0) await new Promise((r) => setTimeout(r, 2));
      },
    },
  ).done;
  assert.deepEqual(st, { code: 0 });
  const got = Buffer.concat(chunks);
  assert.equal(got.length, expected.length);
  assert.ok(got.equals(expected), "bytes out of order or corrupted");
});

test("exec can take stdin from an async iterable and report a signal", async () => {
  async function* gen() {
    for (let i = 0; i < 3; i++) yield `chunk ${i}\n`;
  }
  const out = [];
  const st = await client.exec(
    { lane: lane.name, shell: "cat; kill -INT $$", stdin: gen() },
    { onStdout: (b) => out.push(b) },
  ).done;
  assert.deepEqual(st, { signal: 2 });
  assert.equal(Buffer.concat(out).toString(), "chunk 0\nchunk 1\nchunk 2\n");
});

test("a command that exits without reading its stdin still reports its exit status", async () => {
  // The daemon closes the connection right after the exit status while the
  // client may still be writing stdin; the status must not be lost.
  const input = Buffer.alloc(4 * 1024 * 1024, 0x61);
  const cmds = [
    ["exit 3", { code: 3 }],
    ["head -c 10 >/dev/null; exit 4", { code: 4 }],
    ["kill -TERM $$", { signal: 15 }],
  ];
  for (let i = 0; i < 45; i++) {
    const [shell, want] = cmds[i % cmds.length];
    assert.deepEqual(await client.exec({ lane: lane.name, shell, stdin: input }).done, want, `iteration ${i}: ${shell}`);
  }
});

test("cancel() ends an exec and the daemon kills the command", async () => {
  const countSleepers = async () => {
    let out = "";
    const st = await client.exec(
      { lane: lane.name, shell: "ps -eo args | grep -c '^sleep 31$' || true" },
      { onStdout: (b) => (out += b) },
    ).done;
    assert.deepEqual(st, { code: 0 });
    return out.trim();
  };
  const call = client.exec({ lane: lane.name, shell: "echo up; sleep 31" }, {});
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await countSleepers(), "1");
  const t0 = Date.now();
  call.cancel();
  await assert.rejects(call.done, (e) => e instanceof AgentLaneError && e.code === "CANCELLED");
  assert.ok(Date.now() - t0 < 2000);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await countSleepers(), "0");
});

test("copyIn of a corrupt tar stream fails with the guest's error", async () => {
  async function* junk() {
    yield Buffer.alloc(1024, 0x41);
  }
  await assert.rejects(
    client.copyIn(lane.name, `${lane.workspace}/junk`, junk()),
    (e) => e instanceof AgentLaneError && e.code === "FAILED_PRECONDITION",
  );
});

test("destroyLane is idempotent and ends in DESTROYED", async () => {
  const l = await client.createLane({});
  const first = await client.destroyLane(l.name);
  assert.equal(first.state, "DESTROYED");
  const again = await client.destroyLane(l.name);
  assert.equal(again.state, "DESTROYED");
  await assert.rejects(client.exec({ lane: l.name, shell: "true" }).done, AgentLaneError);
});
