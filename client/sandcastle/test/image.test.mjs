// Images through the provider: lima({ image }), lima({ provision }) (built
// once, then reused by content), and an end-to-end run of the real
// claudeCode() agent definition against a fake `claude` installed by the
// provision script, whose commit must reach the host branch.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { createSandbox, claudeCode } from "@ai-hero/sandcastle";
import { lima, createLaneHandle, buildImage } from "../dist/index.js";
import { useDaemon, tempDirs, sandboxFor, bootRoom } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();

before(() => daemon.start());

const git = (cwd, ...args) => execFileSync("git", args, { cwd, encoding: "utf8" });

const toolScript = [
  "#!/bin/sh",
  "set -e",
  "echo installing-tool",
  "printf '#!/bin/sh\\necho tool-from-image\\n' > /usr/local/bin/lane-tool",
  "chmod 755 /usr/local/bin/lane-tool",
  "",
].join("\n");

test("lima({ image }): the lane is cloned from a built image and has its tools", async () => {
  const out = [];
  const img = await buildImage({
    name: "tools",
    provision: [{ name: "tools.sh", script: toolScript }],
    socketPath: daemon.socketPath,
    onOutput: (_s, d) => out.push(d.toString()),
  });
  assert.equal(img.name, "tools");
  assert.equal(img.cached, false);
  assert.match(out.join(""), /installing-tool/);
  assert.equal(img.id.length, 64);

  const handle = await createLaneHandle({ image: "tools", socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom });
  daemon.cleanup(() => (handle.closed ? undefined : handle.close()));
  const r = await handle.exec("lane-tool");
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, "tool-from-image\n");
  const events = await daemon.client.getEvents(handle.laneName);
  assert.ok(events.some((e) => e.event === "vm-cloned" && e.detail === "tools"), "the lane was cloned from the image");
  await handle.close();

  // Other inputs under the name: refused with noReplace, else the image is
  // replaced, as docker build -t retags.
  const other = [{ name: "tools.sh", script: toolScript + "# other inputs\n" }];
  await assert.rejects(
    buildImage({ name: "tools", provision: other, noReplace: true, socketPath: daemon.socketPath }),
    (e) => e.code === "FAILED_PRECONDITION" && /other inputs/.test(e.message),
  );
  const replaced = await buildImage({ name: "tools", provision: other, socketPath: daemon.socketPath });
  assert.equal(replaced.name, "tools");
  assert.notEqual(replaced.id, img.id, "the name now has the new inputs' image");
  const listed = (await daemon.client.listImages()).filter((i) => i.name === "tools");
  assert.deepEqual(listed.map((i) => i.id), [replaced.id]);

  assert.throws(() => lima({ image: "Bad Name" }), /image must be an image name/);
  assert.throws(() => lima({ image: "tools", provision: "x.sh" }), /either image or provision/);
  await assert.rejects(
    createLaneHandle({ image: "no-such-image", socketPath: daemon.socketPath }),
    (e) => e.code === "NOT_FOUND",
  );
});

test("lima({ provision }): the first create builds the image, the next one reuses it by content", async () => {
  const dir = tmpdir("/tmp/alp-");
  const file = path.join(dir, "lane.sh");
  fs.writeFileSync(file, toolScript.replace("tool-from-image", "tool-from-provision"));
  const before = (await daemon.client.listImages()).length;

  const h1 = await createLaneHandle({ provision: file, socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom });
  daemon.cleanup(() => (h1.closed ? undefined : h1.close()));
  assert.equal((await h1.exec("lane-tool")).stdout, "tool-from-provision\n");
  const images = await daemon.client.listImages();
  assert.equal(images.length, before + 1);
  const auto = images.find((i) => /^p-[0-9a-f]{16}$/.test(i.name));
  assert.ok(auto, "a content-named image exists");
  assert.deepEqual(auto.scripts, ["lane.sh"]);

  const t0 = Date.now();
  const again = await daemon.client.buildImage({ provision: [{ name: "lane.sh", script: fs.readFileSync(file) }] });
  assert.equal(again.name, auto.name);
  assert.equal(again.cached, true, "identical scripts are not built again");
  assert.ok(Date.now() - t0 < 5000);

  const h2 = await createLaneHandle({ provision: [file], socketPath: daemon.socketPath, timeoutMinutes: 10, ...bootRoom });
  daemon.cleanup(() => (h2.closed ? undefined : h2.close()));
  assert.equal((await h2.exec("lane-tool")).stdout, "tool-from-provision\n");
  assert.equal((await daemon.client.listImages()).length, before + 1, "no second image");
  await h1.close();
  await h2.close();
});

// A stand-in for the Claude Code CLI: what claudeCode() runs is
// `claude --print --verbose ... --output-format stream-json --model M -p -`
// with the prompt on stdin. It edits a file, commits, and prints Claude
// Code's stream-json lines (system/init, assistant, result).
const fakeClaudeProvision = `#!/bin/sh
set -e
cat > /usr/local/bin/claude <<'CLAUDE'
#!/bin/bash
set -e
case " $* " in *" --output-format stream-json "*) ;; *) echo "fake claude: expected stream-json" >&2; exit 2 ;; esac
case " $* " in *" -p - "*|*" -p -") ;; *) echo "fake claude: expected the prompt on stdin (-p -)" >&2; exit 2 ;; esac
prompt=$(cat)
echo '{"type":"system","subtype":"init","session_id":"fake-session-1","model":"fake"}'
printf '%s\\n' "$prompt" > CLAUDE_WAS_HERE.md
git add CLAUDE_WAS_HERE.md
git commit -q -m "claude: record the prompt"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"I wrote CLAUDE_WAS_HERE.md and committed it."}]}}\\n'
printf '{"type":"result","subtype":"success","result":"done: %s","session_id":"fake-session-1"}\\n' "$(git rev-parse --short HEAD)"
CLAUDE
chmod 755 /usr/local/bin/claude
`;

test("createSandbox + claudeCode() in a lane provisioned with a fake claude: the commit reaches the host branch", async () => {
  const hostRepo = tmpdir("/tmp/alr-");
  git(hostRepo, "init", "-q", "-b", "main");
  git(hostRepo, "config", "user.name", "Lane Tester");
  git(hostRepo, "config", "user.email", "lane-tester@example.com");
  fs.writeFileSync(path.join(hostRepo, "README.md"), "# claude test\n");
  git(hostRepo, "add", "README.md");
  git(hostRepo, "commit", "-q", "-m", "init");
  const baseHead = git(hostRepo, "rev-parse", "HEAD").trim();
  const provisionFile = path.join(tmpdir("/tmp/alc-"), "lane.sh");
  fs.writeFileSync(provisionFile, fakeClaudeProvision);

  const sandbox = await createSandbox({
    branch: "agent/claude",
    cwd: hostRepo,
    sandbox: await sandboxFor({
      provision: provisionFile,
      timeoutMinutes: 10,
      socketPath: daemon.socketPath,
      env: {
        GIT_AUTHOR_NAME: "Fake Claude",
        GIT_AUTHOR_EMAIL: "claude@example.com",
        GIT_COMMITTER_NAME: "Fake Claude",
        GIT_COMMITTER_EMAIL: "claude@example.com",
      },
    }),
  });
  let closed = false;
  daemon.cleanup(() => (closed ? undefined : sandbox.close()));

  const prompt = "Record this prompt in CLAUDE_WAS_HERE.md and commit. Quotes ' \" stay.";
  const result = await sandbox.run({
    // Session files live in the lane user's home, not /home/agent: no capture.
    agent: claudeCode("claude-sonnet-4-5", { captureSessions: false }),
    prompt,
    maxIterations: 1,
    logging: { type: "file", path: path.join(tmpdir(), "run.log") },
  });
  assert.equal(result.iterations.length, 1);
  assert.equal(result.commits.length, 1);
  assert.equal(git(hostRepo, "rev-parse", "agent/claude~1").trim(), baseHead);
  assert.equal(git(hostRepo, "log", "-1", "--format=%s|%an", "agent/claude").trim(), "claude: record the prompt|Fake Claude");
  assert.equal(git(hostRepo, "show", "agent/claude:CLAUDE_WAS_HERE.md"), `${prompt}\n`);
  await sandbox.close();
  closed = true;
});
