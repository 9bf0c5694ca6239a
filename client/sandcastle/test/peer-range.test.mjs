// Sandcastle's next release (issue 30, item 5): the provider's peer range
// takes the newest @ai-hero/sandcastle published on npm, so that npm never
// refuses to install the provider beside it (ERESOLVE). The range checker
// is scripts/semver-range.mjs, held against npm's own semver here.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { satisfies } from "../scripts/semver-range.mjs";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const lock = JSON.parse(fs.readFileSync(path.join(pkgDir, "package-lock.json"), "utf8"));
const RANGE = pkg.peerDependencies["@ai-hero/sandcastle"];

const CASES = [
  [">=0.12.0 <0.14.0", "0.11.9", false],
  [">=0.12.0 <0.14.0", "0.12.0", true],
  [">=0.12.0 <0.14.0", "0.13.0", true],
  [">=0.12.0 <0.14.0", "0.13.7", true],
  [">=0.12.0 <0.14.0", "0.14.0", false],
  [">=0.12.0 <0.14.0", "0.13.0-beta.1", false],
  [">=0.12.0 <0.14.0", "1.0.0", false],
  ["^0.12.0", "0.12.4", true],
  ["^0.12.0", "0.13.0", false],
  ["^1.2.3", "1.9.0", true],
  ["^1.2.3", "2.0.0", false],
  ["~0.12.1", "0.12.0", false],
  ["0.12.x", "0.12.9", true],
  [">=0.12.0-beta.1 <0.14.0", "0.12.0-beta.2", true],
  ["0.12.0 || 0.13.1", "0.13.1", true],
];

test("the range checker follows npm's rules", () => {
  for (const [range, version, want] of CASES)
    assert.equal(satisfies(version, range), want, `${version} in ${range}`);
});

test("the range checker agrees with the semver npm ships", (t) => {
  let semver;
  try {
    semver = createRequire(import.meta.url)(
      path.join(path.dirname(process.execPath), "..", "lib", "node_modules", "npm", "node_modules", "semver"));
  } catch (e) {
    t.skip(`npm's semver is not beside this node (${e.code}); the table above still holds`);
    return;
  }
  const versions = [...new Set(CASES.map((c) => c[1]).concat(["0.12.0-rc.1", "0.14.0-0", "0.13.99"]))];
  for (const range of new Set(CASES.map((c) => c[0]).concat([RANGE])))
    for (const v of versions)
      assert.equal(satisfies(v, range), semver.satisfies(v, range), `${v} in ${range}`);
});

test("the peer range takes Sandcastle 0.12 and 0.13, and the lock file says the same", () => {
  assert.equal(RANGE, ">=0.12.0 <0.14.0");
  assert.equal(lock.packages[""].peerDependencies["@ai-hero/sandcastle"], RANGE,
    "package-lock.json's root peer range differs from package.json's: npm ci would refuse it");
  const locked = lock.packages["node_modules/@ai-hero/sandcastle"].version;
  assert.ok(satisfies(locked, RANGE), `the locked Sandcastle ${locked} is outside ${RANGE}`);
  assert.ok(satisfies("0.13.0", RANGE));
});

test("the newest @ai-hero/sandcastle on npm is inside the peer range", async (t) => {
  const r = await new Promise((resolve) =>
    execFile("npm", ["view", "@ai-hero/sandcastle", "version"], { timeout: 60_000 },
      (err, stdout, stderr) => resolve({ err, stdout: String(stdout).trim(), stderr: String(stderr) })));
  if (r.err) {
    t.skip(`npm view failed, the registry was not reachable: ${(r.stderr.split("\n").find((l) => /ERR/.test(l)) ?? r.err.message).trim()}`);
    return;
  }
  assert.ok(satisfies(r.stdout, RANGE),
    `@ai-hero/sandcastle ${r.stdout} is the newest on npm but outside the peer range ${RANGE}: ` +
    "npm refuses to install the provider beside it; widen peerDependencies (and test it with npm run test:newest)");
});
