// Run with: npx tsx .sandcastle/main.mts
import { run, claudeCode } from "@ai-hero/sandcastle";
import { lima } from "@agent-lane/provider-lima";

const result = await run({
  name: "node-worker",
  // A disposable VM per run, cloned from the image of lane.sh (built on the
  // first run, reused while the script is unchanged). Build it ahead with
  // `agent-lanectl image build --provision .sandcastle/lane.sh node22` if the
  // first build would outlast Sandcastle's 120 s create timeout.
  sandbox: lima({
    provision: ".sandcastle/lane.sh",
    cpus: 4,
    memoryGiB: 8,
    diskGiB: 30,
    timeoutMinutes: 90,
    // Nothing of the host is mounted. The key is a secret, never env:
    // commands see a placeholder, and the lane's proxy puts the real key
    // (from process.env or .sandcastle/.env) into requests to
    // api.anthropic.com only. It never enters the lane.
    secrets: { ANTHROPIC_API_KEY: ["api.anthropic.com"] },
  }),
  // Session files stay in the lane (the lane user's home, not /home/agent).
  agent: claudeCode("claude-sonnet-4-6", { captureSessions: false }),
  promptFile: "./.sandcastle/prompt.md",
  maxIterations: 3,
  branchStrategy: { type: "branch", branch: "agent/node-worker" },
  hooks: {
    sandbox: {
      onSandboxReady: [{ command: "npm ci" }],
    },
  },
});

console.log(`${result.commits.length} commit(s) on agent/node-worker`);
