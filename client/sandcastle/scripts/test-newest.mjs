// npm run test:newest — the provider suite against the newest
// @ai-hero/sandcastle on npm, beside the locked one that `npm test` uses
// (issue 30, item 5). The package is copied to a temporary directory, the
// newest Sandcastle installed there over the locked one, the provider built
// against its types and its suite run. Prints TAP for tests/check.sh.
//
// A failure counts only while that version is inside the peer range: a
// newest release outside it is reported as skipped (with the suite's
// figures), since npm would not install the provider beside it anyway and
// test/peer-range.test.mjs already fails for it. When the newest is the
// locked version there is nothing new to run, and the suite says so.
// SANDCASTLE_VERSION=X picks X instead of npm's newest.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { satisfies } from "./semver-range.mjs";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const NAME = "@ai-hero/sandcastle";
const range = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")).peerDependencies[NAME];
const locked = JSON.parse(fs.readFileSync(path.join(pkgDir, "package-lock.json"), "utf8"))
  .packages[`node_modules/${NAME}`].version;

function run(cmd, args, cwd, inherit = false) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", stdio: inherit ? ["ignore", "inherit", "inherit"] : "pipe",
    maxBuffer: 64 << 20 });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}`, status: r.status };
}
const comment = (s) => s.trimEnd().split("\n").map((l) => `# ${l}`).join("\n");

console.log("TAP version 13");
// SANDCASTLE_VERSION=X runs the suite against X instead (to try a release
// candidate, or this script's own paths).
const view = process.env.SANDCASTLE_VERSION ? { ok: true, out: process.env.SANDCASTLE_VERSION } :
  run("npm", ["view", NAME, "version"], pkgDir);
if (!view.ok) {
  console.log(comment(view.out));
  console.log(`ok 1 - ${NAME} newest # SKIP npm view failed: the registry was not reachable`);
  process.exit(0);
}
const newest = view.out.trim();
if (newest === locked) {
  console.log(`ok 1 - ${NAME} newest # SKIP the newest on npm, ${newest}, is the locked version: npm test already runs it`);
  process.exit(0);
}
const inRange = satisfies(newest, range);
// A sibling of this package, so that the tests' paths into the repository
// (../../proto, ../../examples, build/) hold in the copy as well.
const tmp = fs.mkdtempSync(path.join(pkgDir, "..", ".sandcastle-newest-"));
try {
  for (const e of ["package.json", "package-lock.json", "tsconfig.json", "src", "scripts", "test", "test-support"])
    fs.cpSync(path.join(pkgDir, e), path.join(tmp, e), { recursive: true });
  // The proto the build copies lives above the package (scripts/copy-proto.mjs).
  const steps = [
    ["npm", ["ci", "--no-audit", "--no-fund"]],
    ["npm", ["install", "--no-save", "--no-audit", "--no-fund", ...(inRange ? [] : ["--force"]), `${NAME}@${newest}`]],
    ["npm", ["run", "--silent", "build"]],
  ];
  for (const [cmd, args] of steps) {
    const r = run(cmd, args, tmp);
    if (!r.ok) {
      console.log(comment(r.out));
      const what = `${cmd} ${args.join(" ")} against ${NAME} ${newest}`;
      console.log(inRange ? `not ok 1 - ${what} failed` :
        `ok 1 - ${what} failed # SKIP ${newest} is outside the peer range ${range}, so its failures do not count`);
      process.exit(inRange ? 1 : 0);
    }
  }
  const got = JSON.parse(fs.readFileSync(path.join(tmp, "node_modules", NAME, "package.json"), "utf8")).version;
  console.log(`# provider suite against ${NAME} ${got} (locked: ${locked}, peer range ${range})`);
  if (inRange) {
    const r = run("node", ["--test", "--test-reporter=tap", "test/"], tmp, true);
    process.exit(r.status ?? 1);
  }
  const r = run("node", ["--test", "--test-reporter=tap", "test/"], tmp);
  console.log(comment(r.out.split("\n").filter((l) => /^# (tests|pass|fail)|not ok/.test(l)).join("\n")));
  console.log(`ok 1 - the provider suite against ${NAME} ${newest} # SKIP ${newest} is outside the peer range ${range}, so its failures do not count (the suite ${r.ok ? "passed" : "failed"})`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
