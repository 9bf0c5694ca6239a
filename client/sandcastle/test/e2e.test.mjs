// End to end: the real createSandbox() of @ai-hero/sandcastle with lima()
// and a fake agent, against the real agent-laned and the limactl simulator.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { createSandbox } from "@ai-hero/sandcastle";
import { useDaemon, tempDirs, sandboxFor } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();

before(() => daemon.start());

const git = (cwd, ...args) => execFileSync("git", args, { cwd, encoding: "utf8" });

/** A plain AgentProvider: reads the prompt from stdin, commits one file, leaves one edit and one new file uncommitted. */
const fakeAgent = {
  name: "fake-agent",
  env: {},
  captureSessions: false,
  buildPrintCommand: ({ prompt }) => ({
    command: [
      "set -e",
      'PROMPT="$(cat)"',
      'echo "fake agent: got prompt: $PROMPT"',
      "printf '%s\\n' \"$PROMPT\" > agent-note.txt",
      "git add agent-note.txt",
      "git commit -q -m 'fake agent: note'",
      "printf 'edited by the agent\\n' >> README.md",
      "printf 'not committed\\n' > untracked.txt",
      'echo "fake agent: committed on $(git rev-parse --abbrev-ref HEAD)"',
    ].join("\n"),
    stdin: prompt,
  }),
  parseStreamLine: (line) => [{ type: "text", text: line }],
};

test("createSandbox + run with a fake agent: the commit and the uncommitted work reach the host; close() destroys the lane", async () => {
  const hostRepo = tmpdir("/tmp/alr-");
  git(hostRepo, "init", "-q", "-b", "main");
  git(hostRepo, "config", "user.name", "Lane Tester");
  git(hostRepo, "config", "user.email", "lane-tester@example.com");
  fs.writeFileSync(path.join(hostRepo, "README.md"), "# test repo\n");
  git(hostRepo, "add", "README.md");
  git(hostRepo, "commit", "-q", "-m", "init");
  const baseHead = git(hostRepo, "rev-parse", "HEAD").trim();

  const sandbox = await createSandbox({
    branch: "agent/test",
    cwd: hostRepo,
    sandbox: await sandboxFor({
      cpus: 2,
      memoryGiB: 2,
      diskGiB: 10,
      timeoutMinutes: 10,
      socketPath: daemon.socketPath,
      labels: { test: "e2e" },
      env: {
        GIT_AUTHOR_NAME: "Fake Agent",
        GIT_AUTHOR_EMAIL: "agent@example.com",
        GIT_COMMITTER_NAME: "Fake Agent",
        GIT_COMMITTER_EMAIL: "agent@example.com",
      },
    }),
  });
  let closed = false;
  daemon.cleanup(() => (closed ? undefined : sandbox.close()));

  const lanes = (await daemon.client.listLanes(false)).filter((l) =>
    l.labels.some((lb) => lb.key === "test" && lb.value === "e2e"),
  );
  assert.equal(lanes.length, 1, "createSandbox should have created exactly one lane");
  const laneName = lanes[0].name;

  const prompt = "Write the note. Quotes ' \" and $dollars stay intact.";
  const result = await sandbox.run({
    agent: fakeAgent,
    prompt,
    maxIterations: 1,
    logging: { type: "file", path: path.join(tmpdir(), "run.log") },
  });
  assert.equal(result.iterations.length, 1);
  assert.equal(result.commits.length, 1);
  assert.match(result.stdout, /fake agent: got prompt: Write the note/);
  assert.match(result.stdout, /fake agent: committed on agent\/test/);

  // The commit is on the host branch, with the prompt delivered through stdin.
  assert.equal(git(hostRepo, "rev-parse", "agent/test~1").trim(), baseHead);
  assert.equal(git(hostRepo, "log", "-1", "--format=%s|%an", "agent/test").trim(), "fake agent: note|Fake Agent");
  assert.equal(git(hostRepo, "show", "agent/test:agent-note.txt"), `${prompt}\n`);
  assert.equal(result.commits[0].sha, git(hostRepo, "rev-parse", "agent/test").trim());

  // Uncommitted work came back through `git diff HEAD` (exact stdout) and copyFileOut.
  const wt = sandbox.worktreePath;
  assert.equal(fs.readFileSync(path.join(wt, "README.md"), "utf8"), "# test repo\nedited by the agent\n");
  assert.equal(fs.readFileSync(path.join(wt, "untracked.txt"), "utf8"), "not committed\n");

  // sandbox.exec runs in the lane's worktree.
  const inLane = await sandbox.exec("git rev-parse --abbrev-ref HEAD && pwd");
  assert.equal(inLane.exitCode, 0);
  assert.match(inLane.stdout, /^agent\/test\n\/.*\/repo\n$/);

  const closeResult = await sandbox.close();
  closed = true;
  assert.ok(closeResult.preservedWorktreePath, "the worktree with uncommitted changes should be preserved");
  const lane = await daemon.client.getLane(laneName);
  assert.equal(lane.state, "DESTROYED");
  assert.deepEqual(await daemon.client.listLanes(false), []);
});
