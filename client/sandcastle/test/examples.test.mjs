// The examples/ at the repository root (thin project configurations) are
// type-checked against the real types: this package's dist/index.d.ts for
// @agent-lane/provider-lima and the installed @ai-hero/sandcastle.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const examples = path.resolve(pkg, "..", "..", "examples");

test("every examples/*/.sandcastle/main.mts type-checks against the real package types", () => {
  const mains = fs
    .readdirSync(examples, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join(examples, d.name, ".sandcastle", "main.mts"))
    .filter((f) => fs.existsSync(f));
  assert.ok(mains.length >= 2, `expected at least two examples, found ${mains.length}`);
  for (const d of fs.readdirSync(examples, { withFileTypes: true }).filter((x) => x.isDirectory())) {
    for (const f of [".sandcastle/lane.sh", ".sandcastle/main.mts", "README.md"]) {
      assert.ok(fs.existsSync(path.join(examples, d.name, f)), `${d.name}/${f} is missing`);
    }
  }
  const tmp = fs.mkdtempSync(path.join(pkg, ".tc-"));
  try {
    const tsconfig = {
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2022", "ESNext.Disposable"],
        types: ["node"],
        typeRoots: [path.join(pkg, "node_modules", "@types")],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        baseUrl: pkg,
        paths: {
          "@agent-lane/provider-lima": [path.join(pkg, "dist", "index.d.ts")],
          "@ai-hero/sandcastle": [path.join(pkg, "node_modules", "@ai-hero", "sandcastle", "dist", "index.d.ts")],
        },
      },
      files: mains,
    };
    const cfg = path.join(tmp, "tsconfig.json");
    fs.writeFileSync(cfg, JSON.stringify(tsconfig, null, 2));
    const tsc = path.join(pkg, "node_modules", "typescript", "bin", "tsc");
    try {
      execFileSync(process.execPath, [tsc, "-p", cfg], { encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      assert.fail(`tsc found errors in the examples:\n${e.stdout}${e.stderr}`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test("the type check can fail: a wrong option in an example is an error", () => {
  const tmp = fs.mkdtempSync(path.join(pkg, ".tc-"));
  try {
    const bad = path.join(tmp, "bad.mts");
    fs.writeFileSync(bad, 'import { lima } from "@agent-lane/provider-lima";\nlima({ mounts: ["/"] });\n');
    const cfg = path.join(tmp, "tsconfig.json");
    fs.writeFileSync(cfg, JSON.stringify({
      compilerOptions: {
        module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true,
        skipLibCheck: true, types: ["node"], typeRoots: [path.join(pkg, "node_modules", "@types")],
        baseUrl: pkg, paths: { "@agent-lane/provider-lima": [path.join(pkg, "dist", "index.d.ts")] },
      },
      files: [bad],
    }));
    const tsc = path.join(pkg, "node_modules", "typescript", "bin", "tsc");
    assert.throws(() => execFileSync(process.execPath, [tsc, "-p", cfg], { stdio: "pipe" }));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

// Issue 31, defect 8: an example hands the agent's API key to the lane as a
// secret (the guest holds a placeholder), never as env (the guest would
// hold the key). Every `env: { ... }` in an example is read with the
// TypeScript parser: no entry may be named like a credential or take its
// value from one.
const CREDENTIAL = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;

function credentialsInEnv(file, ts) {
  const src = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found = [];
  const secrets = [];
  const visit = (node) => {
    if (ts.isPropertyAssignment(node) && ts.isObjectLiteralExpression(node.initializer)) {
      const name = node.name.getText(src).replace(/^["']|["']$/g, "");
      for (const p of node.initializer.properties) {
        const key = p.name ? p.name.getText(src).replace(/^["']|["']$/g, "") : p.getText(src);
        if (name === "env" && (CREDENTIAL.test(key) || CREDENTIAL.test(p.getText(src))))
          found.push(`${path.relative(examples, file)}:${src.getLineAndCharacterOfPosition(p.getStart(src)).line + 1}: env ${key}`);
        if (name === "secrets") secrets.push(key);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return { found, secrets };
}

test("the examples give the API key as a secret, never as env", async () => {
  const ts = (await import(path.join(pkg, "node_modules", "typescript", "lib", "typescript.js"))).default;
  const mains = fs.readdirSync(examples, { withFileTypes: true }).filter((d) => d.isDirectory())
    .map((d) => path.join(examples, d.name, ".sandcastle", "main.mts")).filter((f) => fs.existsSync(f));
  assert.ok(mains.length >= 2);
  for (const f of mains) {
    const { found, secrets } = credentialsInEnv(f, ts);
    assert.deepEqual(found, [], "a credential handed to the lane through env: the guest would hold it; use lima({ secrets })");
    if (/claudeCode\(/.test(fs.readFileSync(f, "utf8")))
      assert.ok(secrets.includes("ANTHROPIC_API_KEY"), `${f}: claudeCode without lima({ secrets: { ANTHROPIC_API_KEY } })`);
  }
  // The check can fail: the form the examples had before.
  const tmp = fs.mkdtempSync(path.join(pkg, ".env-"));
  try {
    const bad = path.join(tmp, "bad.mts");
    fs.writeFileSync(bad, 'lima({ cpus: 4, env: { ANTHROPIC_API_KEY: process.env.ANTHROPIC_API_KEY ?? "" } });\n' +
      'lima({ env: { X: process.env.GH_TOKEN! } });\nlima({ env: { NODE_ENV: "test" } });\n');
    assert.equal(credentialsInEnv(bad, ts).found.length, 2);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
