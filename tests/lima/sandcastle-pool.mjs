// The Sandcastle run of tests/lima/sandcastle.sh's pooled half (not a test
// file of its own: that script prepares the image, the pool and the
// upstream, and checks what this writes). The real createSandbox() and
// claudeCode() of @ai-hero/sandcastle, with lima({ image, secrets }) given
// straight to Sandcastle: its create() must take the booted pool lane well
// inside Sandcastle's fixed 120 s. The `claude` is the fake one committed
// into the image; it calls the upstream with $ANTHROPIC_API_KEY and commits
// what it saw. Writes one JSON object to OUT (Sandcastle itself prints to
// stdout): the lane, the create's times, its events, what the host branch
// holds and the run's stdout.
//
//   node sandcastle-pool.mjs SOCKET IMAGE UPSTREAM_URL HOST_REPO OUT
// with the secret's value in $ANTHROPIC_API_KEY.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const [socketPath, image, upstreamUrl, hostRepo, outFile] = process.argv.slice(2);
const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "client", "sandcastle");
// The package's own copies: this file lives outside client/sandcastle.
const { createSandbox, claudeCode } = await import(
  pathToFileURL(path.join(pkg, "node_modules", "@ai-hero", "sandcastle", "dist", "index.js")).href
);
const { lima } = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
const { AgentLaneClient } = await import(pathToFileURL(path.join(pkg, "dist", "client.js")).href);

const git = (...args) => execFileSync("git", args, { cwd: hostRepo, encoding: "utf8" });
const client = new AgentLaneClient({ socketPath });
const before = new Set((await client.listLanes(true)).map((l) => l.name));

// lima()'s provider as it is, its create() timed on the way through.
const provider = lima({
  image,
  socketPath,
  timeoutMinutes: 20,
  network: "allow",
  allow: ["api.test"],
  labels: { test: "sandcastle-pool" },
  secrets: { ANTHROPIC_API_KEY: { hosts: ["api.test"] } },
  env: {
    ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY,
    UPSTREAM_URL: upstreamUrl,
    GIT_AUTHOR_NAME: "Fake Claude",
    GIT_AUTHOR_EMAIL: "claude@example.com",
    GIT_COMMITTER_NAME: "Fake Claude",
    GIT_COMMITTER_EMAIL: "claude@example.com",
  },
});
let providerCreateMs;
const timed = {
  ...provider,
  create: async (...args) => {
    const t = Date.now();
    const handle = await provider.create(...args);
    providerCreateMs = Date.now() - t;
    return handle;
  },
};
const t0 = Date.now();
const sandbox = await createSandbox({ branch: "agent/pooled", cwd: hostRepo, sandbox: timed });
const createMs = Date.now() - t0;
let out;
try {
  const lanes = (await client.listLanes(false)).filter((l) => l.labels.some((lb) => lb.value === "sandcastle-pool"));
  const result = await sandbox.run({
    agent: claudeCode("claude-sonnet-4-5", { captureSessions: false }),
    prompt: "Call the API with the key and commit what you saw.",
    maxIterations: 1,
  });
  const show = (file) => {
    try {
      return git("show", `agent/pooled:${file}`);
    } catch {
      return "";
    }
  };
  out = {
    lanes: lanes.map((l) => l.name),
    wasPooled: lanes.map((l) => before.has(l.name)),
    secrets: lanes.map((l) => l.secrets),
    createMs,
    providerCreateMs,
    events: (await client.getEvents(lanes[0].name)).map((e) => `${e.event} ${e.detail}`),
    commits: result.commits.length,
    subject: git("log", "-1", "--format=%s|%an", "agent/pooled").trim(),
    keySeen: show("key-seen.txt"),
    reply: show("reply.txt"),
    guestEnv: show("guest-env.txt"),
    stdout: result.stdout,
  };
} finally {
  await sandbox.close();
}
fs.writeFileSync(outFile, JSON.stringify(out) + "\n");
