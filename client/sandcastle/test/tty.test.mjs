// interactiveExec with a TTY (issue 11): when Sandcastle hands the provider
// a terminal, the command gets a pseudo-terminal in the guest: our stdin goes
// raw for the call and is put back, the guest terminal has stdout's size and
// follows its resizes, ^C typed interrupts the command, the status is kept.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { createLaneHandle } from "../dist/index.js";
import { useDaemon, waitFor } from "../test-support/harness.mjs";

const daemon = useDaemon();
let handle;
/** null: the guest has pseudo-terminals; else why not, as the probe said. */
let noPtys = null;

before(async () => {
  await daemon.start();
  handle = await createLaneHandle({ socketPath: daemon.socketPath, labels: { suite: "tty" } });
  // The simulator's guest has pseudo-terminals only when it runs as root
  // (tests/lima-sim/README.md, "Unprivileged mode").
  const r = await handle.exec(`perl -e 'sysopen(my $m, "/dev/ptmx", 2) or die "/dev/ptmx: $!\\n"'`);
  if (r.exitCode !== 0) noPtys = `exit ${r.exitCode}: ${r.stderr.trim()}`;
});

/**
 * Skips only for the one true reason, an unprivileged simulator (the
 * daemon runs as this process's user, not root); as root, as in CI, a
 * guest without pseudo-terminals is a failure.
 */
function needPtys(t) {
  if (noPtys === null) return false;
  if (process.getuid() === 0)
    assert.fail(`the simulator runs as root here, so its guest must have pseudo-terminals: ${noPtys}`);
  t.skip(`not root (uid ${process.getuid()}): the simulator's unprivileged guest has no pseudo-terminals`);
  return true;
}

daemon.cleanup(() => handle?.close());

/** Streams that look like a terminal to the provider, with a log of raw mode. */
function fakeTerminal(rows, columns) {
  const stdin = new PassThrough();
  stdin.isTTY = true;
  stdin.isRaw = false;
  stdin.rawLog = [];
  stdin.setRawMode = (raw) => {
    stdin.isRaw = raw;
    stdin.rawLog.push(raw);
    return stdin;
  };
  const stdout = new PassThrough();
  stdout.isTTY = true;
  stdout.rows = rows;
  stdout.columns = columns;
  const chunks = [];
  stdout.on("data", (d) => chunks.push(d));
  const stderr = new PassThrough();
  const errChunks = [];
  stderr.on("data", (d) => errChunks.push(d));
  const text = () => Buffer.concat(chunks).toString();
  return { stdin, stdout, stderr, text, errText: () => Buffer.concat(errChunks).toString() };
}

test("a TTY gets a guest terminal of stdout's size that follows resizes; raw mode is restored", async (t) => {
  if (needPtys(t)) return;
  const term = fakeTerminal(30, 100);
  const run = handle.interactiveExec(
    ["sh", "-c", 'stty size; test -t 0 && test -t 2 && echo tty-yes; echo "TERM=$TERM"; read x; stty size; echo got:$x >&2; exit 6'],
    term,
  );
  await waitFor(() => term.text().includes("tty-yes"), { what: "the first size" });
  assert.deepEqual(term.stdin.rawLog, [true], "raw while the command runs");
  term.stdout.rows = 40;
  term.stdout.columns = 120;
  term.stdout.emit("resize");
  await new Promise((r) => setTimeout(r, 300));
  term.stdin.write("hello\r");
  const r = await run;
  assert.equal(r.exitCode, 6);
  const out = term.text().replace(/\r/g, "");
  assert.match(out, /^30 100\ntty-yes\nTERM=\S+\n/);
  assert.match(out, /\n40 120\n/);
  assert.match(out, /got:hello\n/, "the terminal's stderr arrives on stdout");
  assert.equal(term.errText(), "");
  assert.deepEqual(term.stdin.rawLog, [true, false], "restored after the call");
});

test("^C typed at the TTY interrupts the guest command (130), raw mode restored", async (t) => {
  if (needPtys(t)) return;
  const term = fakeTerminal(24, 80);
  const run = handle.interactiveExec(["sh", "-c", "echo ready; exec sleep 100"], term);
  await waitFor(() => term.text().includes("ready"), { what: "the command to start" });
  term.stdin.write("\x03");
  const r = await run;
  assert.equal(r.exitCode, 130);
  assert.deepEqual(term.stdin.rawLog, [true, false]);
});

test("a failed call restores raw mode too", async () => {
  const term = fakeTerminal(24, 80);
  await assert.rejects(handle.interactiveExec(["true"], { ...term, cwd: "/no/such/dir" }), /NOT_FOUND|working directory/);
  assert.deepEqual(term.stdin.rawLog, [true, false]);
});
