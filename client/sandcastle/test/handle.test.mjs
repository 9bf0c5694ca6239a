// Contract tests of the sandbox handle against the real agent-laned and the
// limactl simulator: what Sandcastle's isolated-provider interface needs.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { PassThrough, Readable } from "node:stream";
import { lima, createLaneHandle, AgentLaneError, MAX_OUTPUT_TAIL_CHARS } from "../dist/index.js";
import { useDaemon, hostCommandLines, tempDirs, waitFor } from "../test-support/harness.mjs";

const daemon = useDaemon();
const tmpdir = tempDirs();
const SECRET = `al-secret-${randomBytes(12).toString("hex")}`;
let handle;

before(async () => {
  await daemon.start();
  handle = await createLaneHandle(
    { socketPath: daemon.socketPath, env: { FROM_OPTIONS: "options value" }, labels: { suite: "handle" } },
    { env: { SECRET_TOKEN: SECRET, SPACEY: "a b  'c' \"d\" $e\nline2" } },
  );
});

daemon.cleanup(() => handle?.close());

test("lima() returns a Sandcastle isolated provider", () => {
  const provider = lima({ cpus: 8, memoryGiB: 16, diskGiB: 40, timeoutMinutes: 90, env: { A: "1" } });
  assert.equal(provider.tag, "isolated");
  assert.equal(provider.name, "agent-lane-lima");
  assert.deepEqual(provider.env, { A: "1" });
  assert.equal(typeof provider.create, "function");
  assert.throws(() => lima({ cpus: 0 }), /cpus/);
  assert.throws(() => lima({ mounts: ["/"] }), /never mount/);
});

test("create() makes a READY lane with the requested labels and a worktree under its workspace", async () => {
  const lane = await daemon.client.getLane(handle.laneName);
  assert.equal(lane.state, "READY");
  assert.ok(path.posix.isAbsolute(lane.workspace));
  assert.equal(handle.worktreePath, path.posix.join(lane.workspace, "repo"));
  const labels = Object.fromEntries(lane.labels.map((l) => [l.key, l.value]));
  assert.equal(labels.sandcastle, "1");
  assert.equal(labels.suite, "handle");
  // The worktree's parent must be writable: Sandcastle replaces the worktree directory.
  const r = await handle.exec(`mkdir "${handle.worktreePath}_probe" && rmdir "${handle.worktreePath}_probe" && echo ok`);
  assert.deepEqual(r, { stdout: "ok\n", stderr: "", exitCode: 0 });
});

test("exec runs in worktreePath by default", async () => {
  const r = await handle.exec("pwd");
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, `${handle.worktreePath}\n`);
});

test("exec honours a cwd override", async () => {
  const r = await handle.exec("pwd", { cwd: handle.workspace });
  assert.equal(r.stdout, `${handle.workspace}\n`);
  const sub = `${handle.workspace}/cwd test`;
  await handle.exec(`mkdir -p "${sub}"`);
  assert.equal((await handle.exec("pwd", { cwd: sub })).stdout, `${sub}\n`);
});

test("exec resolves with the exit code and stderr of a failing command", async () => {
  const r = await handle.exec("echo out; echo err >&2; exit 7");
  assert.deepEqual(r, { stdout: "out\n", stderr: "err\n", exitCode: 7 });
  const missing = await handle.exec("no-such-command-xyz");
  assert.equal(missing.exitCode, 127);
  assert.match(missing.stderr, /no-such-command-xyz/);
});

test("a signal-killed command reports a non-zero exit code (128 + signal)", async () => {
  const r = await handle.exec("echo before; kill -TERM $$; echo after");
  assert.equal(r.stdout, "before\n");
  assert.equal(r.exitCode, 128 + 15);
  const k = await handle.exec("kill -KILL $$");
  assert.equal(k.exitCode, 128 + 9);
});

test("env from create() reaches every exec and never appears on a host command line", async () => {
  const r = await handle.exec('printf "%s|%s|%s" "$SECRET_TOKEN" "$FROM_OPTIONS" "$SPACEY"');
  assert.equal(r.stdout, `${SECRET}|options value|a b  'c' "d" $e\nline2`);
  const lines = [];
  const running = handle.exec('echo "started"; sleep 2; printf "%s\\n" "$SECRET_TOKEN"', {
    cwd: handle.workspace,
    onLine: (l) => lines.push(l),
  });
  await waitFor(() => lines.length > 0, { what: "the first output line" });
  const needle = Buffer.from(SECRET);
  const leaks = hostCommandLines().filter((p) => p.cmdline.includes(needle));
  assert.equal(leaks.length, 0, `secret on the command line of pid(s) ${leaks.map((p) => p.pid).join(", ")}`);
  // The scan must have seen the lane's processes at all: the daemon runs limactl shell per exec.
  assert.ok(
    hostCommandLines().some((p) => p.cmdline.includes(Buffer.from(handle.laneName))),
    "no host process for the running exec was found, so the scan proves nothing",
  );
  const done = await running;
  assert.equal(done.exitCode, 0);
  assert.deepEqual(lines, ["started", SECRET]);
});

test("onLine streams stdout line by line while the command runs", async () => {
  const events = [];
  const t0 = Date.now();
  const r = await handle.exec("echo one; sleep 2; echo two; printf 'partial'", {
    onLine: (line) => events.push({ line, at: Date.now() - t0 }),
  });
  const total = Date.now() - t0;
  assert.equal(r.exitCode, 0);
  assert.deepEqual(
    events.map((e) => e.line),
    ["one", "two", "partial"],
  );
  assert.ok(total >= 2000, `exec took ${total} ms`);
  assert.ok(events[0].at < total - 1500, `first line arrived at ${events[0].at} ms of ${total} ms: not streamed`);
  assert.ok(r.stdout.endsWith("one\ntwo\npartial"));
});

test("onLine only sees stdout; CRLF line endings are trimmed", async () => {
  const lines = [];
  const r = await handle.exec("printf 'a\\r\\nb\\n'; echo noise >&2", { onLine: (l) => lines.push(l) });
  assert.deepEqual(lines, ["a", "b"]);
  assert.equal(r.stderr, "noise\n");
});

test("streaming execs return a bounded tail of stdout", async () => {
  let count = 0;
  const r = await handle.exec("i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done", {
    onLine: () => count++,
  });
  assert.equal(count, 20000);
  assert.ok(r.stdout.length <= MAX_OUTPUT_TAIL_CHARS, `tail of ${r.stdout.length} chars`);
  assert.ok(r.stdout.endsWith("line-19999\n"));
});

test("stdin is piped to the command and closed", async () => {
  const r = await handle.exec("cat; echo; echo end", { stdin: "hello from the host" });
  assert.equal(r.stdout, "hello from the host\nend\n");
  const empty = await handle.exec("wc -c", { stdin: "" });
  assert.equal(empty.stdout.trim(), "0");
  // Without stdin the command's stdin is closed, not left hanging.
  const none = await handle.exec("cat; echo eof");
  assert.equal(none.stdout, "eof\n");
});

test("a 1 MiB stdin arrives intact, and a command that ignores stdin still finishes", async () => {
  const lines = [];
  for (let i = 0, size = 0; size < 1024 * 1024; i++) {
    lines.push(`${i} ${"x".repeat(60)} é`);
    size += Buffer.byteLength(lines[i]) + 1;
  }
  const input = lines.join("\n") + "\n";
  assert.ok(Buffer.byteLength(input) >= 1024 * 1024);
  const r = await handle.exec("cat", { stdin: input });
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout.length, input.length);
  assert.ok(r.stdout === input, "stdout differs from stdin");
  const streamed = [];
  const s = await handle.exec("cat", { stdin: input, onLine: (l) => streamed.push(l) });
  assert.equal(s.exitCode, 0);
  assert.equal(streamed.length, lines.length);
  assert.equal(streamed[12345], lines[12345]);
  const ignored = await handle.exec("echo ignored", { stdin: input });
  assert.deepEqual(ignored, { stdout: "ignored\n", stderr: "", exitCode: 0 });
});

test("non-streaming stdout is byte-exact: final newline, control bytes, split UTF-8", async () => {
  const r = await handle.exec("printf 'a\\000b\\r\\n\\tc\\n\\n'");
  assert.equal(r.stdout, "a\u0000b\r\n\tc\n\n");
  // 300 kB of two-byte characters after one ASCII byte: the daemon's 64 KiB
  // chunks end in the middle of a character.
  const big = await handle.exec(`perl -e 'binmode STDOUT; print "x", "\\xc3\\xa9" x 150000, "\\n"'`);
  assert.equal(big.stdout, "x" + "é".repeat(150000) + "\n");
  const noNewline = await handle.exec("printf 'last line without newline'");
  assert.equal(noNewline.stdout, "last line without newline");
});

test("concurrent execs on one lane do not mix", async () => {
  const rs = await Promise.all(
    Array.from({ length: 6 }, (_, i) => handle.exec(`sleep 0.$i; echo job-${i}; echo err-${i} >&2; exit ${i}`)),
  );
  rs.forEach((r, i) => assert.deepEqual(r, { stdout: `job-${i}\n`, stderr: `err-${i}\n`, exitCode: i }));
});

test("copyIn puts a file into a directory that does not exist yet", async () => {
  const dir = tmpdir();
  const src = path.join(dir, "source-name.txt");
  const data = Buffer.concat([Buffer.from("copied in\n"), randomBytes(100_000)]);
  fs.writeFileSync(src, data);
  fs.chmodSync(src, 0o640);
  const dest = `${handle.workspace}/in/a/b c/target-name.bin`;
  await handle.copyIn(src, dest);
  const r = await handle.exec(`stat -c '%a %s' "${dest}"; ls "${path.posix.dirname(dest)}"; sha256sum < "${dest}"`);
  const { createHash } = await import("node:crypto");
  const sum = createHash("sha256").update(data).digest("hex");
  assert.equal(r.stdout, `640 ${data.length}\ntarget-name.bin\n${sum}  -\n`);
});

test("copyIn copies a directory tree with modes and symlinks", async () => {
  const dir = tmpdir();
  const src = path.join(dir, "tree");
  fs.mkdirSync(path.join(src, "sub", "deeper"), { recursive: true });
  fs.mkdirSync(path.join(src, "empty"));
  fs.writeFileSync(path.join(src, "run.sh"), "#!/bin/sh\necho ran\n");
  fs.chmodSync(path.join(src, "run.sh"), 0o755);
  fs.writeFileSync(path.join(src, "private.txt"), "secret-ish\n");
  fs.chmodSync(path.join(src, "private.txt"), 0o600);
  fs.writeFileSync(path.join(src, "sub", "deeper", "file.txt"), "deep\n");
  fs.symlinkSync("run.sh", path.join(src, "link-to-run"));
  fs.symlinkSync("../run.sh", path.join(src, "sub", "up-link"));
  const long = "n".repeat(120);
  fs.writeFileSync(path.join(src, "sub", `${long}.txt`), "long name\n");
  const dest = `${handle.workspace}/copied/tree`;
  await handle.copyIn(src, dest);
  const r = await handle.exec(
    [
      `cd "${dest}"`,
      "find . -mindepth 1 | LC_ALL=C sort",
      "stat -c '%a %n' run.sh private.txt",
      "readlink link-to-run; readlink sub/up-link",
      "test -L link-to-run && echo is-link",
      "./link-to-run",
      "cat sub/deeper/file.txt sub/" + long + ".txt",
    ].join("\n"),
  );
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(
    r.stdout,
    [
      "./empty",
      "./link-to-run",
      "./private.txt",
      "./run.sh",
      "./sub",
      "./sub/deeper",
      "./sub/deeper/file.txt",
      `./sub/${long}.txt`,
      "./sub/up-link",
      "755 run.sh",
      "600 private.txt",
      "run.sh",
      "../run.sh",
      "is-link",
      "ran",
      "deep",
      "long name",
      "",
    ].join("\n"),
  );
});

test("copyFileOut writes exact bytes into a host directory that does not exist yet", async () => {
  const guest = `${handle.workspace}/out/all-bytes.bin`;
  await handle.exec(
    `mkdir -p "${path.posix.dirname(guest)}" && perl -e 'binmode STDOUT; print map { chr } 0..255; print "x" x 200000; print "\\n"' > "${guest}"`,
  );
  const expected = Buffer.concat([
    Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    Buffer.alloc(200000, "x"),
    Buffer.from("\n"),
  ]);
  const hostDir = path.join(tmpdir(), "not", "yet", "there");
  const hostPath = path.join(hostDir, "copy.bin");
  await handle.copyFileOut(guest, hostPath);
  assert.ok(fs.readFileSync(hostPath).equals(expected), "copied bytes differ");
  assert.deepEqual(fs.readdirSync(hostDir), ["copy.bin"]);
  // Overwrites an existing file atomically.
  await handle.exec(`printf 'v2\\n' > "${guest}"`);
  await handle.copyFileOut(guest, hostPath);
  assert.equal(fs.readFileSync(hostPath, "utf8"), "v2\n");
  assert.deepEqual(fs.readdirSync(hostDir), ["copy.bin"]);
});

test("copyFileOut keeps the guest file's mode, less the umask", async () => {
  const hostDir = tmpdir();
  await handle.exec(`printf '#!/bin/sh\\n' > run.sh && chmod 0755 run.sh && echo s > secret && chmod 0600 secret`, {
    cwd: handle.workspace,
  });
  const umask = process.umask();
  await handle.copyFileOut(`${handle.workspace}/run.sh`, path.join(hostDir, "run.sh"));
  await handle.copyFileOut(`${handle.workspace}/secret`, path.join(hostDir, "secret"));
  assert.equal(fs.statSync(path.join(hostDir, "run.sh")).mode & 0o777, 0o755 & ~umask);
  assert.equal(fs.statSync(path.join(hostDir, "secret")).mode & 0o777, 0o600 & ~umask);
});

test("copyFileOut of a missing file rejects and leaves no file behind", async () => {
  const hostDir = path.join(tmpdir(), "missing-out");
  await assert.rejects(
    handle.copyFileOut(`${handle.workspace}/does/not/exist.txt`, path.join(hostDir, "x.txt")),
    (err) => err instanceof AgentLaneError && err.code === "NOT_FOUND",
  );
  assert.deepEqual(fs.readdirSync(hostDir), []);
});

test("copyFileOut refuses a directory and leaves no file behind", async () => {
  const hostDir = tmpdir();
  await assert.rejects(
    handle.copyFileOut(handle.worktreePath, path.join(hostDir, "dir-copy")),
    (err) => err instanceof AgentLaneError && /is a directory/.test(err.message),
  );
  assert.deepEqual(fs.readdirSync(hostDir), []);
});

test("a copy-out past its bound is rejected, before it streams, and leaves no temporary file", async () => {
  const guest = `${handle.workspace}/out/big.bin`;
  await handle.exec(`head -c 600000 /dev/zero > "${guest}"`);
  const hostDir = tmpdir();
  await assert.rejects(
    daemon.client.copyFileOut(handle.laneName, guest, path.join(hostDir, "big.bin"), { maxBytes: 300000 }),
    (err) => err instanceof AgentLaneError && err.code === "TOO_LARGE",
  );
  assert.deepEqual(fs.readdirSync(hostDir), []);
  assert.deepEqual(fs.readdirSync(hostDir), []);
});

test("interactiveExec runs an argv with the given streams (no TTY)", async () => {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out = [];
  const errOut = [];
  stdout.on("data", (d) => out.push(d));
  stderr.on("data", (d) => errOut.push(d));
  const r = await handle.interactiveExec(["sh", "-c", 'cat; echo "$SECRET_TOKEN"; echo to-stderr >&2; exit 5'], {
    stdin: Readable.from([Buffer.from("typed line 1\n"), Buffer.from("typed line 2\n")]),
    stdout,
    stderr,
  });
  assert.equal(r.exitCode, 5);
  assert.equal(Buffer.concat(out).toString(), `typed line 1\ntyped line 2\n${SECRET}\n`);
  assert.equal(Buffer.concat(errOut).toString(), "to-stderr\n");
});

test("an exec in a missing directory rejects with NOT_FOUND", async () => {
  await assert.rejects(
    handle.exec("true", { cwd: `${handle.workspace}/no/such/dir` }),
    (err) => err instanceof AgentLaneError && err.code === "NOT_FOUND",
  );
});
