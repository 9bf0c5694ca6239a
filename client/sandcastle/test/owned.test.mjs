// A provider lane belongs to the Node process that made it (CreateLane
// owned): however a createSandbox script ends, ^C, SIGTERM, SIGKILL, or
// simply returning without close(), the daemon destroys its lane.
// Sandcastle's own SIGINT/SIGTERM handler only says "Worktree preserved"
// and exits; the lane must not outlive the process by its lifetime.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { spawn, execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { useDaemon, tempDirs, waitFor } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();
const script = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "test-support", "sandbox-script.mjs");

before(() => daemon.start());

function hostRepo() {
  const dir = tmpdir("/tmp/alo-");
  const git = (...args) => execFileSync("git", args, { cwd: dir, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Lane Tester");
  git("config", "user.email", "lane-tester@example.com");
  fs.writeFileSync(path.join(dir, "README.md"), "# test repo\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "init");
  return dir;
}

/** Runs the script; resolves once it has its sandbox, with the lane and a way to end it. */
async function startScript(tag, how) {
  const child = spawn(process.execPath, [script, daemon.socketPath, hostRepo(), tag, how], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (out.stdout += d));
  child.stderr.on("data", (d) => (out.stderr += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  let ended = false;
  exited.then(() => (ended = true));
  // A test that fails half-way leaves no script running.
  daemon.cleanup(() => (ended ? undefined : child.kill("SIGKILL")));
  await waitFor(() => out.stdout.includes("sandbox ready") || ended, { timeoutMs: 60_000, what: "the sandbox" });
  assert.match(out.stdout, /sandbox ready/, `the script ended early: ${out.stderr}`);
  const lanes = (await daemon.client.listLanes(true)).filter((l) => l.labels.some((lb) => lb.key === "test" && lb.value === tag));
  assert.equal(lanes.length, 1);
  return { child, out, exited, lane: lanes[0] };
}

async function assertDestroyedForOwner(lane) {
  let state;
  await waitFor(
    async () => (state = (await daemon.client.getLane(lane.name)).state) === "DESTROYED",
    { timeoutMs: 20_000, what: `lane ${lane.name} to be destroyed` },
  ).catch((err) => {
    err.message += ` (it is ${state})`;
    throw err;
  });
  const events = (await daemon.client.getEvents(lane.name)).map((e) => `${e.event} ${e.detail}`);
  assert.ok(events.some((e) => /its owning client disconnected/.test(e)), events.join("\n"));
}

for (const signal of ["SIGINT", "SIGTERM", "SIGKILL"]) {
  test(`a createSandbox script killed with ${signal}: the daemon destroys its lane`, async () => {
    const run = await startScript(`killed-${signal.toLowerCase()}`, "wait");
    assert.equal(run.lane.state, "READY");
    assert.equal(run.lane.owned, true);
    run.child.kill(signal);
    const { code, signal: died } = await run.exited;
    if (signal === "SIGKILL") {
      assert.equal(died, "SIGKILL");
    } else {
      // Sandcastle's handler ran, and exited: no clean-up of ours did.
      assert.equal(code, 1, run.out.stderr);
      assert.match(run.out.stderr, /Worktree preserved/);
    }
    await assertDestroyedForOwner(run.lane);
  });
}

test("a script that ends without close(): it exits, and its lane goes with it", async () => {
  const run = await startScript("no-close", "end");
  const { code } = await run.exited;
  assert.equal(code, 0, run.out.stderr);
  await assertDestroyedForOwner(run.lane);
});
