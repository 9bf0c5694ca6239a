// Pieces the C and TypeScript clients must agree on, against a fake daemon
// (no VM, no agent-laned): the default socket path, and paged ListLanes /
// GetEvents answers collected on new connections, bounded, never cut.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { AgentLaneClient, AgentLaneError, defaultSocketPath, DEFAULT_SOCKET_REL, LIST_MAX } from "../dist/client.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const lanectl = process.env.AGENT_LANECTL ?? path.join(repo, "build", "agent-lanectl");
const root = protobuf.loadSync(path.join(here, "..", "dist", "agentlane.proto"));
const Request = root.lookupType("agentlane.v1.Request");
const Response = root.lookupType("agentlane.v1.Response");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "alpage-"));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test("the default socket path is the same in C (proto/wire.h, agent-lanectl) and TypeScript", () => {
  const wireH = fs.readFileSync(path.join(repo, "proto", "wire.h"), "utf8");
  const m = wireH.match(/#define WIRE_DEFAULT_SOCKET_REL "([^"]+)"/);
  assert.ok(m, "WIRE_DEFAULT_SOCKET_REL in proto/wire.h");
  assert.equal(DEFAULT_SOCKET_REL, m[1]);

  const home = path.join(tmp, "home");
  fs.mkdirSync(home);
  const env = { ...process.env, HOME: home };
  delete env.AGENT_LANE_SOCKET;
  const r = spawnSync(lanectl, ["version"], { env, encoding: "utf8" });
  const said = r.stderr.match(/cannot reach agent-laned at (\S+): /);
  assert.ok(said, `agent-lanectl names the socket it tried: ${r.stderr}`);
  const saved = { HOME: process.env.HOME, SOCK: process.env.AGENT_LANE_SOCKET };
  try {
    process.env.HOME = home;
    delete process.env.AGENT_LANE_SOCKET;
    assert.equal(defaultSocketPath(), said[1]);
  } finally {
    process.env.HOME = saved.HOME;
    if (saved.SOCK !== undefined) process.env.AGENT_LANE_SOCKET = saved.SOCK;
  }
});

function frame(msg) {
  const body = Response.encode(Response.create(msg)).finish();
  const hdr = Buffer.alloc(4);
  hdr.writeUInt32BE(body.length);
  return Buffer.concat([hdr, Buffer.from(body)]);
}

/**
 * A fake daemon: hello, then `page(request, connectionIndex)` answers the
 * one call of each connection. Records the requests it saw.
 */
async function fakeDaemon(name, page) {
  const sock = path.join(tmp, name);
  const seen = [];
  let conns = 0;
  const server = net.createServer((c) => {
    const index = conns++;
    let buf = Buffer.alloc(0);
    c.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const n = buf.readUInt32BE(0);
        const req = Request.toObject(Request.decode(buf.subarray(4, 4 + n)), { oneofs: true, defaults: true });
        buf = buf.subarray(4 + n);
        if (req.body === "hello") {
          c.write(frame({ hello: { protocolVersion: 1, daemonVersion: "fake", limits: { maxFrameBytes: 1048576 } } }));
        } else {
          seen.push({ index, req });
          c.end(frame(page(req, index)));
        }
      }
    });
    c.on("error", () => undefined);
  });
  await new Promise((r) => server.listen(sock, r));
  return { sock, seen, close: () => new Promise((r) => server.close(r)) };
}

const lane = (i) => ({ name: `al-${i.toString(16).padStart(16, "0")}`, state: 2, workspace: "/w" });

// Three pages: 2 + 2 + 1 lanes; tokens "p1", "p2", then none.
function threePages(req) {
  const token = (req.listLanes ?? req.getEvents).pageToken;
  const start = token === "" ? 0 : token === "p1" ? 2 : 4;
  const next = start === 0 ? "p1" : start === 2 ? "p2" : "";
  const count = start === 4 ? 1 : 2;
  if (req.listLanes) {
    return { laneList: { lanes: Array.from({ length: count }, (_, k) => lane(start + k)), nextPageToken: next } };
  }
  return {
    eventList: {
      events: Array.from({ length: count }, (_, k) => ({ timeMs: start + k, lane: lane(0).name, event: `e${start + k}`, detail: "" })),
      nextPageToken: next,
    },
  };
}

test("listLanes and getEvents follow the page token, one connection per page", async () => {
  const d = await fakeDaemon("three.sock", threePages);
  try {
    const client = new AgentLaneClient({ socketPath: d.sock });
    const lanes = await client.listLanes(true);
    assert.deepEqual(lanes.map((l) => l.name), [0, 1, 2, 3, 4].map((i) => lane(i).name));
    assert.deepEqual(d.seen.map((s) => s.req.listLanes.pageToken), ["", "p1", "p2"]);
    assert.equal(new Set(d.seen.map((s) => s.index)).size, 3);
    assert.ok(d.seen.every((s) => s.req.listLanes.all === true));
    const events = await client.getEvents(lane(0).name);
    assert.deepEqual(events.map((e) => e.event), ["e0", "e1", "e2", "e3", "e4"]);
  } finally {
    await d.close();
  }
});

function runCtl(sock, args) {
  return new Promise((resolve) => {
    const p = spawn(lanectl, ["--socket", sock, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

test("agent-lanectl ls and events collect every page too (libagentlane's loop)", async () => {
  const d = await fakeDaemon("three-c.sock", threePages);
  try {
    const ls = await runCtl(d.sock, ["ls", "--all", "--json"]);
    assert.equal(ls.code, 0, ls.err);
    assert.deepEqual(JSON.parse(ls.out).map((l) => l.name), [0, 1, 2, 3, 4].map((i) => lane(i).name));
    assert.deepEqual(d.seen.map((s) => s.req.listLanes.pageToken), ["", "p1", "p2"]);
    assert.equal(new Set(d.seen.map((s) => s.index)).size, 3);
    const ev = await runCtl(d.sock, ["events", "--json", lane(0).name]);
    assert.equal(ev.code, 0, ev.err);
    assert.deepEqual(JSON.parse(ev.out).map((e) => e.event), ["e0", "e1", "e2", "e3", "e4"]);
  } finally {
    await d.close();
  }
});

test("a daemon that never stops paging is TOO_LARGE past the bound, in C and TypeScript", async () => {
  let n = 0;
  const d = await fakeDaemon("endless.sock", () => ({
    laneList: { lanes: Array.from({ length: 500 }, () => lane(n++)), nextPageToken: "more" },
  }));
  try {
    const client = new AgentLaneClient({ socketPath: d.sock });
    await assert.rejects(client.listLanes(), (e) => e instanceof AgentLaneError && e.code === "TOO_LARGE");
    assert.equal(d.seen.length, LIST_MAX / 500 + 1);
    const ls = await runCtl(d.sock, ["ls"]);
    assert.equal(ls.code, 1);
    assert.match(ls.err, /TOO_LARGE/);
  } finally {
    await d.close();
  }
});

test("an empty page that asks for more is an error, not a loop", async () => {
  const d = await fakeDaemon("empty.sock", () => ({ laneList: { lanes: [], nextPageToken: "again" } }));
  try {
    const client = new AgentLaneClient({ socketPath: d.sock });
    await assert.rejects(client.listLanes(), (e) => e instanceof AgentLaneError);
    const ls = await runCtl(d.sock, ["ls"]);
    assert.equal(ls.code, 1);
    assert.match(ls.err, /PROTOCOL/);
    assert.ok(d.seen.length <= 2);
  } finally {
    await d.close();
  }
});
