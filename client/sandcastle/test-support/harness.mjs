// Shared test harness: runs the real agent-laned against the limactl
// simulator in a private temporary directory, and tears everything down
// afterwards (lanes, daemon, simulated VMs, files), even when tests fail.
//
// Lives outside test/ so that `node --test test/` does not run it as a test file.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before } from "node:test";
import { createIsolatedSandboxProvider } from "@ai-hero/sandcastle";
import { AgentLaneClient } from "../dist/client.js";
import { lima, createLaneHandle } from "../dist/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "..", "..", "..");
export const daemonBin = process.env.AGENT_LANED || path.join(repoRoot, "build", "agent-laned");
export const limaSim = process.env.LIMA_SIM || path.join(repoRoot, "tests", "lima-sim", "limactl");
/** The test build of the daemon (a test resolver and trust store: tests/proxy/testhooks.c). */
export const testDaemonBin = path.join(path.dirname(daemonBin), "tests", "agent-laned-test");
/** Real Lima (tests/lima/tier.sh sets AL_REAL_LIMA), whose guests have a network; the simulator's have none. */
export const realGuests = process.env.AL_REAL_LIMA === "1";
/** How long one boot may take: minutes for a real guest under TCG (the tier's AL_BOOT_S), moments for the simulator's. */
export const bootMs = realGuests ? Number(process.env.AL_TEST_BOOT_S || 300) * 1000 : 30_000;
/** Options for a provider create that boots a lane, and may build its image first: room for both on real guests. */
export const bootRoom = realGuests ? { createTimeoutMs: 3 * bootMs } : {};

/**
 * The provider a test gives createSandbox(): lima(options) itself on the
 * simulator, whose create() boots the lane. Sandcastle abandons a create()
 * after a fixed 120 s, and a real guest under TCG here boots in longer
 * (tests/lima/README.md), so on real Lima the lane is made first by the
 * provider's own createLaneHandle(options), with room for its boot and its
 * image build, and create() hands that lane over. This is the pre-warming a
 * user on a slow host does with the warm pool, which lanes with secrets do
 * not use; everything after create() is Sandcastle's run on the real lane.
 */
export async function sandboxFor(options) {
  const provider = lima(options);
  if (!realGuests) return provider;
  const handle = await createLaneHandle({ ...options, ...bootRoom });
  let taken = false;
  return createIsolatedSandboxProvider({
    name: provider.name,
    env: options.env,
    create: async (createOptions) => {
      if (taken) throw new Error("sandboxFor: its lane was handed over already");
      for (const [k, v] of Object.entries(createOptions?.env ?? {})) {
        if (options.env?.[k] !== v) throw new Error(`sandboxFor: create() was given ${k}, which the lane made ahead lacks`);
      }
      taken = true;
      return handle;
    },
  });
}

/**
 * Prints the tails of the Lima logs the daemon kept for lanes whose start
 * failed (daemon/lanelog.c, which caps their size), before teardown removes
 * them with the lanes: on real Lima a boot that never comes up is otherwise
 * lost with the state directory. The same files and shape as the regress
 * suites' show_kept_logs (tests/regress/lib.sh), each line a TAP comment so
 * that no guest line can read as a test result to tests/check.sh.
 */
function showKeptLogs(dir) {
  for (const lane of safeReaddir(dir)) {
    for (const file of ["serial.log", "ha.stderr.log", "limactl.log"]) {
      let text;
      try {
        text = fs.readFileSync(path.join(dir, lane, file), "utf8");
      } catch {
        continue;
      }
      const lines = text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      if (lines.length === 0) continue;
      console.error(`# kept ${lane}/${file}:`);
      for (const line of lines.slice(-25)) console.error(`#   ${line.slice(0, 300)}`);
    }
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait until `fn()` is truthy (polling), or throw after `timeoutMs`. */
export async function waitFor(fn, { timeoutMs = 10_000, intervalMs = 20, what = "condition" } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * One daemon for this test file. Returns a context; `await ctx.start()`
 * (idempotent) fills in { tmp, socketPath, limaHome, client }. Node 20 runs
 * root-level before/after hooks concurrently, so a test file's own `before`
 * must await ctx.start(), and its cleanups go through ctx.cleanup(fn), which
 * runs them before the daemon is stopped.
 */
export function useDaemon({ extraArgs = [], env: extraEnv = {}, bin = daemonBin } = {}) {
  const ctx = { tmp: "", socketPath: "", limaHome: "", client: undefined, daemon: undefined, output: [] };
  const cleanups = [];
  let starting;
  ctx.log = () => ctx.output.join("");
  ctx.cleanup = (fn) => cleanups.push(fn);
  ctx.start = () => (starting ??= start());
  before(() => ctx.start());

  async function start() {
    for (const [what, p] of [["agent-laned ($AGENT_LANED)", bin], ["limactl simulator ($LIMA_SIM)", limaSim]]) {
      if (!fs.existsSync(p)) throw new Error(`${what} not found at ${p}; run make at the repository root`);
    }
    // Short: Lima's instance socket paths must stay under 104 bytes.
    ctx.tmp = fs.mkdtempSync("/tmp/alt-");
    ctx.socketPath = path.join(ctx.tmp, "s", "agent-laned.sock");
    ctx.limaHome = path.join(ctx.tmp, "st", "lima");
    const args = [
      "--socket", ctx.socketPath,
      "--state-dir", path.join(ctx.tmp, "st"),
      "--limactl", limaSim,
      ...extraArgs,
    ];
    const env = { ...process.env, LIMA_SIM_BOOT_MS: "20", ...extraEnv };
    delete env.AGENT_LANE_SOCKET;
    delete env.AGENT_LANE_CONFIG;
    ctx.daemon = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    ctx.daemon.stdout.on("data", (d) => ctx.output.push(d.toString()));
    ctx.daemon.stderr.on("data", (d) => ctx.output.push(d.toString()));
    ctx.exited = new Promise((resolve) => ctx.daemon.on("exit", (code, signal) => resolve({ code, signal })));
    ctx.exited.then(({ code, signal }) => {
      if (!ctx.stopping) {
        process.stderr.write(`\nagent-laned exited unexpectedly (code ${code}, signal ${signal}); its log:\n${ctx.log()}\n`);
        ctx.unexpectedExit = { code, signal };
      }
    });
    killOnExit.add(ctx.daemon);
    let exited = false;
    ctx.exited.then(() => (exited = true));
    await waitFor(() => exited || fs.existsSync(ctx.socketPath), { timeoutMs: 10_000, what: "the daemon socket" });
    if (exited) throw new Error(`agent-laned exited at startup:\n${ctx.log()}`);
    ctx.client = new AgentLaneClient({ socketPath: ctx.socketPath });
    await waitFor(() => ctx.client.hello().then(() => true, () => false), { timeoutMs: 5_000, what: "the daemon hello" });
    return ctx;
  }

  after(async () => {
    if (realGuests && ctx.tmp) showKeptLogs(path.join(ctx.tmp, "st", "log", "lanes"));
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error("test cleanup failed:", err);
      }
    }
    try {
      if (ctx.client && ctx.daemon && ctx.daemon.exitCode === null) {
        const lanes = await ctx.client.listLanes(false).catch(() => []);
        await Promise.all(lanes.map((l) => ctx.client.destroyLane(l.name).catch(() => undefined)));
      }
    } finally {
      ctx.stopping = true;
      if (ctx.daemon && ctx.daemon.exitCode === null && ctx.daemon.signalCode === null) {
        ctx.daemon.kill("SIGTERM");
        const t = setTimeout(() => ctx.daemon.kill("SIGKILL"), 5_000);
        await ctx.exited;
        clearTimeout(t);
      }
      if (ctx.daemon) killOnExit.delete(ctx.daemon);
      if (ctx.tmp) {
        // Simulated VMs left behind (a failed test, a crashed daemon).
        for (const name of safeReaddir(ctx.limaHome)) {
          if (/^al-[0-9a-f]{16}$/.test(name)) {
            spawnSync(limaSim, ["delete", "--force", name], {
              env: { ...process.env, LIMA_HOME: ctx.limaHome },
              stdio: "ignore",
              timeout: 20_000,
            });
          }
        }
        fs.rmSync(ctx.tmp, { recursive: true, force: true });
      }
    }
    if (ctx.unexpectedExit) {
      throw new Error(`agent-laned died during the tests (${JSON.stringify(ctx.unexpectedExit)})`);
    }
  });

  return ctx;
}

function safeReaddir(d) {
  try {
    return fs.readdirSync(d);
  } catch {
    return [];
  }
}

// A test process that dies without running `after` hooks must not leave a daemon behind.
const killOnExit = new Set();
process.on("exit", () => {
  for (const d of killOnExit) {
    try {
      d.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** Every host process's command line (NUL-separated arguments), as Buffers. */
export function hostCommandLines() {
  const out = [];
  for (const pid of safeReaddir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      out.push({ pid: Number(pid), cmdline: fs.readFileSync(`/proc/${pid}/cmdline`) });
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return out;
}

/** Make a fresh temporary directory that is removed after this file's tests. */
export function tempDirs() {
  const made = [];
  after(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  return (prefix = "/tmp/alh-") => {
    const d = fs.mkdtempSync(prefix);
    made.push(d);
    return d;
  };
}
