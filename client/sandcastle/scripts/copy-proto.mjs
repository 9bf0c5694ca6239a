// Build step: ship the protocol schema inside the package (dist/agentlane.proto)
// so that the published package does not depend on the repository layout.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(pkg, "..", "..", "proto", "agentlane.proto");
const dest = join(pkg, "dist", "agentlane.proto");
if (!existsSync(src)) {
  console.error(`copy-proto: ${src} not found (build from the agent-lane repository)`);
  process.exit(1);
}
mkdirSync(dirname(dest), { recursive: true });
copyFileSync(src, dest);
