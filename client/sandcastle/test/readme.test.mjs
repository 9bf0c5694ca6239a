// The TypeScript examples in README.md and this package's README.md
// (issue 18): each parses as a module on the Node that runs the tests (the
// one `make setup` installs, 20 and later: no `await using`) and
// type-checks against the real types, as examples.test.mjs does for
// examples/.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const readmes = [path.resolve(pkg, "..", "..", "README.md"), path.join(pkg, "README.md")];

/** The ```ts blocks of a Markdown file, with the line each starts on. */
function tsBlocks(file) {
  const out = [];
  const lines = fs.readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```ts") continue;
    const start = i + 1;
    while (++i < lines.length && lines[i].trim() !== "```");
    out.push({ file, line: start + 1, code: lines.slice(start, i).join("\n") + "\n" });
  }
  return out;
}

const blocks = readmes.flatMap(tsBlocks);

test("the READMEs have TypeScript examples", () => {
  for (const f of readmes)
    assert.ok(blocks.some((b) => b.file === f), `no \`\`\`ts block in ${f}`);
});

test(`every README example is valid syntax on this Node (${process.version})`, () => {
  const tmp = fs.mkdtempSync(path.join(pkg, ".rd-"));
  try {
    for (const b of blocks) {
      const f = path.join(tmp, `${path.basename(path.dirname(b.file))}-${b.line}.mjs`);
      fs.writeFileSync(f, b.code);
      try {
        execFileSync(process.execPath, ["--check", f], { stdio: "pipe", encoding: "utf8" });
      } catch (e) {
        assert.fail(`${b.file}:${b.line} does not parse on Node ${process.version}:\n${e.stderr}`);
      }
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test("the syntax check can fail: `await using` is refused where Node lacks it", (t) => {
  const major = Number(process.versions.node.split(".")[0]);
  if (major >= 24) return t.skip(`Node ${process.version} has \`await using\`; the check is for older ones`);
  const tmp = fs.mkdtempSync(path.join(pkg, ".rd-"));
  try {
    const f = path.join(tmp, "bad.mjs");
    fs.writeFileSync(f, "await using x = { async [Symbol.asyncDispose]() {} };\n");
    assert.throws(() => execFileSync(process.execPath, ["--check", f], { stdio: "pipe" }));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test("every README example type-checks against the real package types", () => {
  const tmp = fs.mkdtempSync(path.join(pkg, ".rd-"));
  try {
    const files = blocks.map((b) => {
      const f = path.join(tmp, `${path.basename(path.dirname(b.file))}-${b.line}.mts`);
      fs.writeFileSync(f, "export {};\n" + b.code);
      return f;
    });
    const cfg = path.join(tmp, "tsconfig.json");
    fs.writeFileSync(cfg, JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022"],
        types: ["node"], typeRoots: [path.join(pkg, "node_modules", "@types")],
        strict: true, noEmit: true, skipLibCheck: true, baseUrl: pkg,
        paths: {
          "@agent-lane/provider-lima": [path.join(pkg, "dist", "index.d.ts")],
          "@ai-hero/sandcastle": [path.join(pkg, "node_modules", "@ai-hero", "sandcastle", "dist", "index.d.ts")],
        },
      },
      files,
    }));
    const tsc = path.join(pkg, "node_modules", "typescript", "bin", "tsc");
    try {
      execFileSync(process.execPath, [tsc, "-p", cfg], { encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      assert.fail(`tsc found errors in the README examples:\n${e.stdout}${e.stderr}`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
