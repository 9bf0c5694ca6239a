// Run by test/owned.test.mjs as a user's script would run: the real
// createSandbox() of @ai-hero/sandcastle with lima(), then it waits to be
// signalled ("wait"), or just ends without close() ("end").
// Usage: node sandbox-script.mjs SOCKET HOST_REPO TAG wait|end
import { createSandbox } from "@ai-hero/sandcastle";
import { lima } from "../dist/index.js";

const [socketPath, hostRepo, tag, how] = process.argv.slice(2);
await createSandbox({
  branch: `agent/${tag}`,
  cwd: hostRepo,
  sandbox: lima({ socketPath, labels: { test: tag } }),
});
process.stdout.write("sandbox ready\n");
if (how === "wait") setInterval(() => undefined, 1 << 30);
