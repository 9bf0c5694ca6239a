// Run with: npx tsx .sandcastle/main.mts
import { run, claudeCode } from "@ai-hero/sandcastle";
import { lima } from "@agent-lane/provider-lima";

await run({
  name: "docker-tests",
  sandbox: lima({
    provision: ".sandcastle/lane.sh",
    // Rootless Docker Engine for the lane user; DOCKER_HOST points at its
    // socket in every command. The host's Docker is never reachable.
    docker: true,
    cpus: 4,
    memoryGiB: 8,
    diskGiB: 40,
    timeoutMinutes: 120,
    // The key is a secret, never env: commands see a placeholder, and the
    // lane's proxy puts the real key (from process.env or .sandcastle/.env)
    // into requests to api.anthropic.com only. It never enters the lane.
    secrets: { ANTHROPIC_API_KEY: ["api.anthropic.com"] },
  }),
  agent: claudeCode("claude-sonnet-4-6", { captureSessions: false }),
  promptFile: "./.sandcastle/prompt.md",
  maxIterations: 1,
  branchStrategy: { type: "branch", branch: "agent/docker-tests" },
  hooks: {
    sandbox: {
      // Fail early if the lane's Docker is not up.
      onSandboxReady: [{ command: "docker info --format '{{.SecurityOptions}}'" }, { command: "npm ci" }],
    },
  },
});
