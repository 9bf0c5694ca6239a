/**
 * @agent-lane/provider-lima — a Sandcastle isolated sandbox provider that
 * runs every sandbox in its own disposable Agent Lane (a Lima VM managed by
 * the per-user agent-laned daemon).
 *
 * Nothing on the host is mounted into the guest: Sandcastle moves the
 * repository in with copyIn (a tar stream) and gets its results back with
 * copyFileOut; commands run through the daemon's exec call.
 */
import { lstat, readFile, realpath, stat } from "node:fs/promises";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import { performance } from "node:perf_hooks";
import * as tar from "tar";
import {
  createIsolatedSandboxProvider,
  type ExecResult,
  type InteractiveExecOptions,
  type IsolatedCreateOptions,
  type IsolatedSandboxHandle,
  type IsolatedSandboxProvider,
} from "@ai-hero/sandcastle";
import {
  AgentLaneClient,
  AgentLaneError,
  type ExecCall,
  type Label,
  type Lane,
  type LaneOwner,
  type NetworkMode,
  type ProvisionScript,
  type SecretRequest,
  requestNeverSent,
  secretHeaderValid,
} from "./client.js";
import { parseHost, remoteCommandValid } from "./transport.js";
import { type CallTimer, ProviderTrace, timed, traceOn, traceText } from "./trace.js";

export {
  AgentLaneClient,
  AgentLaneError,
  defaultSocketPath,
  type AgentLaneClientOptions,
  type BuildImageRequest,
  type CreateLaneRequest,
  type Image,
  type ProvisionScript,
  type ErrorCodeName,
  type ExecRequest,
  type ExecStatus,
  type Lane,
  type LaneEvent,
  type LaneOwner,
  type LaneState,
  type Label,
  type LaneSecret,
  type Limits,
  type NetworkMode,
  type SecretRequest,
  DEFAULT_CREDENTIAL_HEADERS,
  secretHeaderValid,
} from "./client.js";

/**
 * One secret of lima({ secrets }) in its long form: its hosts and the
 * headers its value may go in besides the default credential ones.
 */
export interface SecretSpec {
  /** Host names or "*.example.org" patterns; [] or absent: the daemon's `secret` line. */
  readonly hosts?: ReadonlyArray<string>;
  /**
   * Headers besides Authorization, x-api-key, api-key, x-goog-api-key,
   * private-token and x-auth-token (at most 8; HTTP tokens, not Host,
   * Cookie or a framing or hop-by-hop header); absent: the daemon's
   * `secret_header` line, if any.
   */
  readonly headers?: ReadonlyArray<string>;
}

/** Provider name reported to Sandcastle. */
export const PROVIDER_NAME = "agent-lane-lima";

/** Characters kept from the end of stdout/stderr of streaming execs (their full output went to onLine). */
export const MAX_OUTPUT_TAIL_CHARS = 64 * 1024;

/** Default bound on create(): Sandcastle abandons a create() that takes 120 s without closing it. */
const DEFAULT_CREATE_TIMEOUT_MS = 110_000;

export interface LimaOptions {
  /** Virtual CPUs of the lane (default: the daemon's default_cpus). */
  readonly cpus?: number;
  /** Memory of the lane in GiB; fractions allowed (default: the daemon's default_memory). */
  readonly memoryGiB?: number;
  /** Disk of the lane in GiB (default: the daemon's default_disk). */
  readonly diskGiB?: number;
  /** Hard lifetime of the lane in minutes; the daemon destroys it then (default: the daemon's default_lifetime). */
  readonly timeoutMinutes?: number;
  /** Destroy the lane after this many minutes without activity (default: the daemon's default_idle_timeout). */
  readonly idleTimeoutMinutes?: number;
  /** agent-laned control socket (default $AGENT_LANE_SOCKET, else ~/.agent-lane/run/agent-laned.sock). */
  readonly socketPath?: string;
  /**
   * Lanes on another of your machines: "ssh://[USER@]HOST[:PORT]" runs
   * `agent-lanectl system dial-stdio` there through your own ssh (your
   * config, agent and known hosts; BatchMode, so an unknown host key fails).
   * Lanes stay owned by this process over ssh as locally. Without host,
   * socketPath or context: $AGENT_LANE_HOST, $AGENT_LANE_SOCKET,
   * $AGENT_LANE_CONTEXT, then agent-lanectl's current context.
   */
  readonly host?: string;
  /** An agent-lanectl context (`agent-lanectl context create NAME --host URL`). */
  readonly context?: string;
  /** ssh hosts: the agent-lanectl to run there, e.g. "/opt/homebrew/bin/agent-lanectl". */
  readonly remoteCommand?: string;
  /** Environment variables for every command in the lane (merged under the env Sandcastle passes to create). */
  readonly env?: Record<string, string>;
  /** Per-command timeout in milliseconds; an exec that passes it rejects with DEADLINE_EXCEEDED (default: none). */
  readonly execTimeoutMs?: number;
  /** Largest file copyFileOut accepts, in bytes (default: the daemon's max_copy_out_bytes; more is RESOURCE_EXHAUSTED). */
  readonly maxCopyOutBytes?: number;
  /**
   * An alias for the lane (`agent-lanectl create --name`), unique among live
   * lanes: `agent-lanectl exec NAME ...` then reaches the sandbox by it.
   */
  readonly name?: string;
  /** Extra lane labels (keys: [A-Za-z0-9._/-], 1-63 characters). `sandcastle=1` is always set. */
  readonly labels?: Record<string, string>;
  /** Bound on create() in milliseconds, lane boot included (default 110000; Sandcastle gives up at 120 s). */
  readonly createTimeoutMs?: number;
  /**
   * Clone the lane from this image (`agent-lanectl image build NAME ...`):
   * the agent's toolchain is already installed, and the lane still gets the
   * isolation template (no mounts, no forwards) whatever the image holds.
   */
  readonly image?: string;
  /**
   * Provision scripts (file paths, relative to the current directory, or
   * inline `{ name, script }`), run as root in a VM made from the lane
   * template, e.g. `".sandcastle/lane.sh"`. The image is addressed by the
   * scripts' content: the first create() builds it, later ones clone it at
   * once. The first build counts against createTimeoutMs; for long ones,
   * build ahead with `agent-lanectl image build` or buildImage().
   */
  readonly provision?: string | ProvisionScript | ReadonlyArray<string | ProvisionScript>;
  /**
   * With `provision` (or alone): the image also gets Docker Engine,
   * rootless for the lane user, with DOCKER_HOST set for every command.
   * Containers run in the lane's own daemon; no host socket is forwarded.
   */
  readonly docker?: boolean;
  /**
   * The lane's egress policy (default: the daemon's `network` key, itself
   * "internet"): "internet" reaches the internet but nothing on the host or
   * a private range; "none" nothing at all; "allow" only the `allow` hosts,
   * over HTTP(S) through the lane's own proxy (commands get HTTP_PROXY and
   * HTTPS_PROXY). Enforced in the guest, which has no root unless `sudo`.
   */
  readonly network?: NetworkMode;
  /** With network "allow": host names or "*.example.org" patterns (at most 32). */
  readonly allow?: ReadonlyArray<string>;
  /** Keep passwordless root in the guest; the network policy is then advisory. */
  readonly sudo?: boolean;
  /**
   * Credentials the lane uses without holding them, e.g.
   * `{ ANTHROPIC_API_KEY: ["api.anthropic.com"] }`: every command sees
   * the variable set to a placeholder, and the lane's proxy puts the real
   * value in its place only in HTTPS requests to those hosts (names or
   * "*.example.org"; an empty list: the daemon's `secret` line). The value
   * is the `env` entry of that name (yours or Sandcastle's), else
   * process.env's; it goes to agent-laned over its socket and never into
   * the guest. At most 16, 16 hosts each. The proxy puts it only in the
   * default credential headers (Authorization, x-api-key, ...); the long
   * form `{ GITLAB_TOKEN: { hosts: ["gitlab.com"], headers: ["Job-Token"] } }`
   * names others (SecretSpec).
   */
  readonly secrets?: Readonly<Record<string, ReadonlyArray<string> | SecretSpec>>;
}

/** The handle returned by create(): Sandcastle's IsolatedSandboxHandle plus the lane's identity. */
export interface LaneHandle extends IsolatedSandboxHandle {
  /** The lane's name (al-…). */
  readonly laneName: string;
  /** The lane as the daemon reported it when it became ready. */
  readonly lane: Lane;
  /** The lane's workspace in the guest (the parent of worktreePath). */
  readonly workspace: string;
  /** True once close() was called. */
  readonly closed: boolean;
  interactiveExec(args: string[], options: InteractiveExecOptions): Promise<{ exitCode: number }>;
  /**
   * Save this lane's disk as image `image` (agent-lanectl commit), so that
   * `lima({ image })` starts more lanes from it: prepare once, fan out. The
   * lane stays usable once it resolves (its VM was stopped, cloned and
   * started again; execs meanwhile fail with UNAVAILABLE).
   */
  commit(image: string, options?: { noWorkspace?: boolean }): Promise<import("./client.js").Image>;
}

/**
 * Sandcastle isolated sandbox provider backed by Agent Lane:
 * `createSandbox({ branch, sandbox: lima({ cpus: 8, memoryGiB: 16, diskGiB: 40, timeoutMinutes: 90 }) })`.
 */
export function lima(options: LimaOptions = {}): IsolatedSandboxProvider {
  validateOptions(options);
  return createIsolatedSandboxProvider({
    name: PROVIDER_NAME,
    env: options.env,
    create: (createOptions: IsolatedCreateOptions) => createLaneHandle(options, createOptions),
  });
}

/**
 * Create a lane and return its sandbox handle (what lima()'s create does).
 * The lane is destroyed again if any step fails. It is owned by a
 * connection this process keeps open: however the process ends (^C, a
 * crash, SIGKILL), the daemon destroys the lane, as it does for
 * `agent-lanectl run`; close() destroys it sooner.
 */
export async function createLaneHandle(
  options: LimaOptions = {},
  createOptions: IsolatedCreateOptions = { env: {} },
): Promise<LaneHandle> {
  validateOptions(options);
  const env = { ...(options.env ?? {}), ...(createOptions.env ?? {}) };
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new AgentLaneError("INVALID_ARGUMENT", `environment variable name ${JSON.stringify(name)} is not [A-Za-z_][A-Za-z0-9_]*`);
    }
    if (typeof value !== "string" || value.includes("\0")) {
      throw new AgentLaneError("INVALID_ARGUMENT", `environment variable ${name} must be a string without NUL`);
    }
  }
  const secrets = takeSecrets(options.secrets, env);
  const client = new AgentLaneClient({
    socketPath: options.socketPath,
    host: options.host,
    context: options.context,
    remoteCommand: options.remoteCommand,
  });
  const createId = randomBytes(8).toString("hex");
  const labels: Label[] = [
    { key: "sandcastle", value: "1" },
    { key: "agent-lane/provider", value: PROVIDER_NAME },
    { key: "agent-lane/create-id", value: createId },
  ];
  for (const [key, value] of Object.entries(options.labels ?? {})) {
    if (labels.some((l) => l.key === key)) continue;
    labels.push({ key, value });
  }

  const timeoutMs = options.createTimeoutMs ?? DEFAULT_CREATE_TIMEOUT_MS;
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new AgentLaneError("DEADLINE_EXCEEDED", `lane creation took longer than ${timeoutMs} ms`)),
    timeoutMs,
  );
  timer.unref();
  let laneName: string | undefined;
  let owner: LaneOwner | undefined;
  // Whether a lane may exist to clean up: a create request may have reached
  // the daemon. An image build, or a create that never connected (no
  // daemon), leaves none, and looking for one would only add a second
  // error to the first.
  let createSent = false;
  const createStart = performance.now();
  try {
    let image = options.image;
    if (options.provision !== undefined || options.docker) {
      const built = await client.buildImage(
        { provision: options.provision !== undefined ? await readProvision(options.provision) : [], docker: options.docker },
        { signal: abort.signal },
      );
      image = built.name;
    }
    createSent = true;
    const created = await client.createOwnedLane(
      {
        cpus: options.cpus,
        memoryMib: options.memoryGiB !== undefined ? Math.round(options.memoryGiB * 1024) : undefined,
        diskGib: options.diskGiB,
        timeoutS: options.timeoutMinutes !== undefined ? Math.round(options.timeoutMinutes * 60) : undefined,
        idleTimeoutS: options.idleTimeoutMinutes !== undefined ? Math.round(options.idleTimeoutMinutes * 60) : undefined,
        labels,
        image,
        network: options.network,
        allow: options.allow !== undefined ? [...options.allow] : undefined,
        sudo: options.sudo,
        alias: options.name,
        secrets,
      },
      {
        signal: abort.signal,
        onProgress: (p) => {
          if (p.phase === "registered" && /^al-[0-9a-f]{16}$/.test(p.message)) laneName = p.message;
        },
      },
    );
    const lane = created.lane;
    owner = created.owner;
    laneName = lane.name;
    if (lane.state !== "READY") {
      throw new AgentLaneError("FAILED_PRECONDITION", `lane ${lane.name} is ${lane.state}, not READY`);
    }
    const workspace = lane.workspace;
    if (!workspace || !path.posix.isAbsolute(workspace) || !/^[A-Za-z0-9._+@,:/-]+$/.test(workspace)) {
      throw new AgentLaneError(
        "FAILED_PRECONDITION",
        `lane ${lane.name} reported an unusable workspace ${JSON.stringify(workspace)}`,
      );
    }
    const worktreePath = path.posix.join(workspace, "repo");
    const handle = new AgentLaneHandle(client, lane, owner, worktreePath, env, options);
    if (traceOn()) {
      process.stderr.write(`agent-lane trace: ${lane.name} create (lane ready) ${(performance.now() - createStart).toFixed(1)} ms\n`);
    }
    // Sandcastle needs git, sh and mktemp in the guest and replaces
    // worktreePath (so its parent must be writable); check now so that a
    // broken image fails here, where the lane is still cleaned up.
    const probe = await raceAbort(
      handle.exec(
        [
          "missing=''",
          "for c in git sh mktemp rm mv ls; do command -v \"$c\" >/dev/null 2>&1 || missing=\"$missing $c\"; done",
          "if [ -n \"$missing\" ]; then echo \"missing in the guest:$missing\" >&2; exit 3; fi",
          `mkdir -p ${shQuote(worktreePath)} && test -w ${shQuote(workspace)} && test -w ${shQuote(worktreePath)}`,
        ].join("\n"),
        { cwd: workspace },
      ),
      abort.signal,
      () => void handle.close().catch(() => undefined),
    );
    if (probe.exitCode !== 0) {
      throw new AgentLaneError(
        "FAILED_PRECONDITION",
        `lane ${lane.name} cannot host a Sandcastle worktree (exit ${probe.exitCode}): ${probe.stderr.trim() || probe.stdout.trim()}`,
      );
    }
    return handle;
  } catch (err) {
    if (laneName !== undefined || (createSent && !requestNeverSent(err))) {
      await cleanupFailedCreate(client, laneName, createId).catch((cleanupErr: Error) => {
        if (err instanceof Error) err.message += ` (and cleaning up the lane failed: ${cleanupErr.message})`;
      });
    }
    // Whatever the cleanup managed: a closed owner is a destroyed lane.
    owner?.close();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The secrets of a create, their values taken out of env (Sandcastle's own
 * env plumbing, or ours), else from process.env: env then no longer carries
 * them, so no command ever gets a value, only the lane's placeholder.
 */
function takeSecrets(
  secrets: LimaOptions["secrets"],
  env: Record<string, string>,
): SecretRequest[] | undefined {
  if (secrets === undefined) return undefined;
  const out: SecretRequest[] = [];
  for (const [name, spec] of Object.entries(secrets)) {
    const { hosts, headers } = secretSpec(spec);
    const value = Object.prototype.hasOwnProperty.call(env, name) ? env[name] : process.env[name];
    if (value === undefined || value === "") {
      throw new AgentLaneError(
        "INVALID_ARGUMENT",
        `lima(): secret ${name} has no value: give it in env, or set ${name} in the environment`,
      );
    }
    if (!/^[\x20-\x7e]+$/.test(value) || value.startsWith(" ") || value.endsWith(" ") || value.length > 8192) {
      throw new AgentLaneError(
        "INVALID_ARGUMENT",
        `lima(): secret ${name}: the value must be 1-8192 characters of printable ASCII without a space at either end`,
      );
    }
    delete env[name];
    out.push({ name, value, hosts: [...hosts], headers: [...headers] });
  }
  return out;
}

/** A secret's hosts and headers, from either form of lima({ secrets }). */
function secretSpec(spec: ReadonlyArray<string> | SecretSpec): { hosts: ReadonlyArray<string>; headers: ReadonlyArray<string> } {
  if (Array.isArray(spec)) return { hosts: spec, headers: [] };
  const s = spec as SecretSpec;
  return { hosts: s.hosts ?? [], headers: s.headers ?? [] };
}

/** Loads provision scripts: paths are read now, relative to the current directory. */
export async function readProvision(
  p: string | ProvisionScript | ReadonlyArray<string | ProvisionScript>,
): Promise<ProvisionScript[]> {
  const list = typeof p === "string" || !Array.isArray(p) ? [p as string | ProvisionScript] : [...p];
  const out: ProvisionScript[] = [];
  for (const item of list) {
    if (typeof item === "string") {
      out.push({ name: path.basename(item), script: await readFile(path.resolve(item)) });
    } else {
      out.push({ name: item.name, script: item.script });
    }
  }
  return out;
}

/**
 * Builds (or finds, by content) an image ahead of time, streaming the
 * scripts' output: `await buildImage({ name: "node22", provision: [".sandcastle/lane.sh"] })`.
 */
export async function buildImage(
  options: {
    name?: string;
    provision: string | ProvisionScript | ReadonlyArray<string | ProvisionScript>;
    from?: string;
    docker?: boolean;
    /** Refuse, rather than replace, an image of this name built from other inputs. */
    noReplace?: boolean;
    socketPath?: string;
    host?: string;
    context?: string;
    remoteCommand?: string;
    onOutput?: (stream: "stdout" | "stderr", data: Buffer) => void;
    signal?: AbortSignal;
  },
): Promise<import("./client.js").Image> {
  const client = new AgentLaneClient({
    socketPath: options.socketPath,
    host: options.host,
    context: options.context,
    remoteCommand: options.remoteCommand,
  });
  return client.buildImage(
    {
      name: options.name,
      provision: await readProvision(options.provision),
      from: options.from,
      docker: options.docker,
      noReplace: options.noReplace,
    },
    { onOutput: options.onOutput, signal: options.signal },
  );
}

/**
 * Commits a lane (a name, alias or prefix: e.g. the `name` given to
 * lima({ name })) as an image that lima({ image }) and pool shapes start
 * from: `await commit({ lane: "prep", image: "prepared" })`.
 */
export async function commit(
  options: {
    lane: string;
    image: string;
    noWorkspace?: boolean;
    socketPath?: string;
    host?: string;
    context?: string;
    remoteCommand?: string;
    signal?: AbortSignal;
  },
): Promise<import("./client.js").Image> {
  const client = new AgentLaneClient({
    socketPath: options.socketPath,
    host: options.host,
    context: options.context,
    remoteCommand: options.remoteCommand,
  });
  return client.commitLane(options.lane, options.image, { noWorkspace: options.noWorkspace, signal: options.signal });
}

async function cleanupFailedCreate(client: AgentLaneClient, laneName: string | undefined, createId: string): Promise<void> {
  const names = new Set<string>();
  if (laneName) names.add(laneName);
  else {
    // The create call may have failed before the daemon told us the name
    // (connection lost, timeout): find the lane by its unique label.
    const lanes = await client.listLanes(false);
    for (const l of lanes) {
      if (l.labels.some((lb) => lb.key === "agent-lane/create-id" && lb.value === createId)) names.add(l.name);
    }
  }
  for (const name of names) {
    try {
      await client.destroyLane(name);
    } catch (err) {
      if (err instanceof AgentLaneError && err.code === "NOT_FOUND") continue;
      throw err;
    }
  }
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal, onAbort: () => void): Promise<T> {
  if (signal.aborted) {
    onAbort();
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const listener = () => {
      onAbort();
      reject(signal.reason);
    };
    signal.addEventListener("abort", listener, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", listener);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", listener);
        reject(e);
      },
    );
  });
}

function validateOptions(o: LimaOptions): void {
  const positive = (name: string, v: number | undefined, integer: boolean) => {
    if (v === undefined) return;
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
      throw new AgentLaneError("INVALID_ARGUMENT", `lima(): ${name} must be a positive ${integer ? "integer" : "number"}`);
    }
  };
  positive("cpus", o.cpus, true);
  positive("memoryGiB", o.memoryGiB, false);
  positive("diskGiB", o.diskGiB, true);
  positive("timeoutMinutes", o.timeoutMinutes, false);
  positive("idleTimeoutMinutes", o.idleTimeoutMinutes, false);
  positive("execTimeoutMs", o.execTimeoutMs, true);
  positive("maxCopyOutBytes", o.maxCopyOutBytes, true);
  positive("createTimeoutMs", o.createTimeoutMs, true);
  if (o.image !== undefined && (typeof o.image !== "string" || !/^[a-z0-9][a-z0-9._-]{0,62}$/.test(o.image))) {
    throw new AgentLaneError("INVALID_ARGUMENT", "lima(): image must be an image name ([a-z0-9][a-z0-9._-]{0,62})");
  }
  if (o.image !== undefined && (o.provision !== undefined || o.docker)) {
    throw new AgentLaneError("INVALID_ARGUMENT", "lima(): give either image or provision/docker, not both");
  }
  if (o.network !== undefined && !["internet", "none", "allow"].includes(o.network as string)) {
    throw new AgentLaneError("INVALID_ARGUMENT", 'lima(): network must be "internet", "none" or "allow"');
  }
  if (o.allow !== undefined) {
    if (!Array.isArray(o.allow) || o.allow.length > 32 || o.allow.some((h) => typeof h !== "string" || h.length === 0 || h.length > 255)) {
      throw new AgentLaneError("INVALID_ARGUMENT", "lima(): allow must be at most 32 host names or *.domain patterns");
    }
    if (o.allow.length > 0 && o.network !== "allow") {
      throw new AgentLaneError("INVALID_ARGUMENT", 'lima(): allow needs network: "allow"');
    }
  }
  if (o.sudo !== undefined && typeof o.sudo !== "boolean") {
    throw new AgentLaneError("INVALID_ARGUMENT", "lima(): sudo must be a boolean");
  }
  if (o.secrets !== undefined) {
    if (typeof o.secrets !== "object" || o.secrets === null || Array.isArray(o.secrets) || Object.keys(o.secrets).length > 16) {
      throw new AgentLaneError("INVALID_ARGUMENT", "lima(): secrets must map at most 16 variable names to host lists");
    }
    for (const [name, spec] of Object.entries(o.secrets)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
        throw new AgentLaneError("INVALID_ARGUMENT", `lima(): secret name ${JSON.stringify(name)} is not [A-Za-z_][A-Za-z0-9_]{0,62}`);
      }
      const long = typeof spec === "object" && spec !== null && !Array.isArray(spec);
      if (long && Object.keys(spec).some((k) => k !== "hosts" && k !== "headers")) {
        throw new AgentLaneError("INVALID_ARGUMENT", `lima(): secret ${name} takes hosts and headers only`);
      }
      const hosts = long ? ((spec as SecretSpec).hosts ?? []) : spec;
      const headers = long ? ((spec as SecretSpec).headers ?? []) : [];
      if (!Array.isArray(hosts) || hosts.length > 16 || hosts.some((h) => typeof h !== "string" || h.length === 0 || h.length > 255)) {
        throw new AgentLaneError("INVALID_ARGUMENT", `lima(): secret ${name} needs at most 16 host names or *.domain patterns`);
      }
      if (!Array.isArray(headers) || headers.length > 8) {
        throw new AgentLaneError("INVALID_ARGUMENT", `lima(): secret ${name}: headers is a list of at most 8 header names`);
      }
      const bad = headers.find((h) => !secretHeaderValid(h));
      if (bad !== undefined) {
        throw new AgentLaneError(
          "INVALID_ARGUMENT",
          `lima(): secret ${name}: header ${JSON.stringify(bad)} cannot carry a credential: a header name is an HTTP token of 1-64 characters, and not Host, Connection, Content-Length, Transfer-Encoding, another framing or hop-by-hop header, or Cookie`,
        );
      }
    }
  }
  if (o.host !== undefined) {
    try {
      parseHost(o.host);
    } catch (err) {
      throw new AgentLaneError("INVALID_ARGUMENT", `lima(): host: ${(err as Error).message}`);
    }
  }
  if (o.remoteCommand !== undefined && !remoteCommandValid(o.remoteCommand)) {
    throw new AgentLaneError("INVALID_ARGUMENT", 'lima(): remoteCommand must be a path of [A-Za-z0-9._+/-] (or ~/...), not beginning with "-"');
  }
  const forbidden = ["mounts", "mount", "hostMounts", "volumes"];
  for (const key of forbidden) {
    if (key in (o as Record<string, unknown>)) {
      throw new AgentLaneError("INVALID_ARGUMENT", `lima(): ${key} is not supported: lanes never mount host paths`);
    }
  }
}

/** Single-quote a string for sh. */
function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Keeps the last `max` characters of a text stream. */
class TextTail {
  private parts: string[] = [];
  private length = 0;
  constructor(private readonly max: number) {}
  push(s: string): void {
    if (!s) return;
    this.parts.push(s);
    this.length += s.length;
    while (this.length - this.parts[0]!.length >= this.max) {
      this.length -= this.parts.shift()!.length;
    }
    if (this.parts.length > 64) {
      const joined = this.parts.join("");
      const kept = joined.length > this.max ? joined.slice(joined.length - this.max) : joined;
      this.parts = [kept];
      this.length = kept.length;
    }
  }
  toString(): string {
    const s = this.parts.join("");
    return s.length > this.max ? s.slice(s.length - this.max) : s;
  }
}

class AgentLaneHandle implements LaneHandle {
  readonly laneName: string;
  readonly workspace: string;
  private readonly inflight = new Set<ExecCall>();
  private closing: Promise<void> | undefined;
  private isClosed = false;
  private readonly trace: ProviderTrace | undefined;

  constructor(
    private readonly client: AgentLaneClient,
    readonly lane: Lane,
    private readonly owner: LaneOwner,
    readonly worktreePath: string,
    private readonly env: Record<string, string>,
    private readonly options: LimaOptions,
  ) {
    this.laneName = lane.name;
    this.workspace = lane.workspace;
    this.trace = traceOn() ? new ProviderTrace(lane.name) : undefined;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  private ensureOpen(what: string): void {
    if (this.isClosed) throw new AgentLaneError("CANCELLED", `${what}: lane ${this.laneName} is closed`);
  }

  async exec(
    command: string,
    options: { onLine?: (line: string) => void; cwd?: string; sudo?: boolean; stdin?: string } = {},
  ): Promise<ExecResult> {
    this.ensureOpen("exec");
    return timed(this.trace, "exec", traceText(command), (t) => this.execRun(command, options, t));
  }

  private async execRun(
    command: string,
    options: { onLine?: (line: string) => void; cwd?: string; sudo?: boolean; stdin?: string },
    timer: CallTimer | undefined,
  ): Promise<ExecResult> {
    const onLine = options.onLine;
    const streaming = typeof onLine === "function";
    const stdoutChunks: Buffer[] = [];
    const stderrChunks: Buffer[] = [];
    const stdoutTail = new TextTail(MAX_OUTPUT_TAIL_CHARS);
    const stderrTail = new TextTail(MAX_OUTPUT_TAIL_CHARS);
    const stdoutDecoder = new StringDecoder("utf8");
    const stderrDecoder = new StringDecoder("utf8");
    let partial = "";
    let callbackError: unknown;

    const emit = (line: string) => {
      if (this.isClosed || callbackError !== undefined) return;
      try {
        onLine!(line.endsWith("\r") ? line.slice(0, -1) : line);
      } catch (err) {
        callbackError = err;
      }
    };
    const onText = (text: string) => {
      stdoutTail.push(text);
      if (!text) return;
      const lines = (partial + text).split("\n");
      partial = lines.pop()!;
      for (const line of lines) emit(line);
    };

    const call = this.client.exec(
      {
        lane: this.laneName,
        ...(options.sudo ? { argv: ["sudo", "-n", "-E", "sh", "-c", command] } : { shell: command }),
        workdir: options.cwd ?? this.worktreePath,
        env: this.env,
        stdin: options.stdin,
        timeoutMs: this.options.execTimeoutMs,
      },
      {
        onStdout: (data) => {
          timer?.firstOutput();
          if (streaming) onText(stdoutDecoder.write(data));
          else stdoutChunks.push(data);
        },
        onStderr: (data) => {
          timer?.firstOutput();
          if (streaming) stderrTail.push(stderrDecoder.write(data));
          else stderrChunks.push(data);
        },
      },
    );
    this.inflight.add(call);
    let status;
    try {
      status = await call.done;
    } finally {
      this.inflight.delete(call);
    }
    const exitCode = status.signal !== undefined ? 128 + status.signal : status.code;
    if (!streaming) {
      return {
        stdout: Buffer.concat(stdoutChunks).toString("utf8"),
        stderr: Buffer.concat(stderrChunks).toString("utf8"),
        exitCode,
      };
    }
    onText(stdoutDecoder.end());
    stderrTail.push(stderrDecoder.end());
    if (partial) {
      emit(partial);
      partial = "";
    }
    if (callbackError !== undefined) throw callbackError;
    return { stdout: stdoutTail.toString(), stderr: stderrTail.toString(), exitCode };
  }

  /**
   * Run `args` (an argv, no shell) with the given streams. When stdin is a
   * TTY the command gets a pseudo-terminal in the guest, as Sandcastle asks
   * of providers: our terminal goes raw for the call (so ^C and ^Z reach
   * the guest as keys) and is put back however the call ends, the guest's
   * terminal starts at stdout's size and follows its resizes, and all the
   * command's output arrives on stdout. Otherwise it gets pipes.
   */
  async interactiveExec(args: string[], options: InteractiveExecOptions): Promise<{ exitCode: number }> {
    this.ensureOpen("interactiveExec");
    if (args.length === 0) throw new AgentLaneError("INVALID_ARGUMENT", "interactiveExec needs a command");
    const input = options.stdin;
    const write = (out: NodeJS.WritableStream, data: Buffer) =>
      new Promise<void>((resolve) => {
        if (out.write(data)) resolve();
        else out.once("drain", () => resolve());
      });
    const ttyIn = input as NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown; isRaw?: boolean };
    const ttyOut = options.stdout as NodeJS.WritableStream & { isTTY?: boolean; rows?: number; columns?: number };
    const tty = ttyIn.isTTY === true;
    const size = () => ({ rows: ttyOut.rows || 24, cols: ttyOut.columns || 80 });
    const env = tty && this.env.TERM === undefined ? { ...this.env, TERM: process.env.TERM || "xterm-256color" } : this.env;
    let rawSet = false;
    if (tty && typeof ttyIn.setRawMode === "function" && !ttyIn.isRaw) {
      ttyIn.setRawMode(true);
      rawSet = true;
    }
    const stdinIter = streamChunks(input);
    let onResize: (() => void) | undefined;
    try {
      const call = this.client.exec(
        {
          lane: this.laneName,
          argv: args,
          workdir: options.cwd ?? this.worktreePath,
          env,
          stdin: stdinIter.iterable,
          timeoutMs: this.options.execTimeoutMs,
          ...(tty ? { tty: size() } : {}),
        },
        {
          onStdout: (d) => (this.isClosed ? undefined : write(options.stdout, d)),
          onStderr: (d) => (this.isClosed ? undefined : write(options.stderr, d)),
        },
      );
      if (tty && typeof (ttyOut as NodeJS.EventEmitter).on === "function") {
        onResize = () => {
          const s = size();
          call.resize(s.rows, s.cols);
        };
        (ttyOut as NodeJS.EventEmitter).on("resize", onResize);
      }
      this.inflight.add(call);
      try {
        const status = await call.done;
        return { exitCode: status.signal !== undefined ? 128 + status.signal : status.code };
      } finally {
        this.inflight.delete(call);
      }
    } finally {
      if (onResize) (ttyOut as NodeJS.EventEmitter).removeListener("resize", onResize);
      stdinIter.stop();
      if (rawSet) ttyIn.setRawMode!(false);
    }
  }

  async copyIn(hostPath: string, sandboxPath: string): Promise<void> {
    this.ensureOpen("copyIn");
    if (!path.posix.isAbsolute(sandboxPath)) {
      throw new AgentLaneError("INVALID_ARGUMENT", `copyIn: sandbox path ${JSON.stringify(sandboxPath)} is not absolute`);
    }
    const target = path.posix.normalize(sandboxPath);
    // Follow a symlink given as the source itself; links inside a directory stay links.
    const source = await realpath(hostPath);
    const st = await stat(source);
    let archive: AsyncIterable<Uint8Array>;
    let destDir: string;
    if (st.isDirectory()) {
      destDir = target;
      archive = tar.create({ cwd: source, portable: true }, ["."]) as unknown as AsyncIterable<Uint8Array>;
    } else if (st.isFile()) {
      if (target === "/") throw new AgentLaneError("INVALID_ARGUMENT", "copyIn: cannot replace / with a file");
      destDir = path.posix.dirname(target);
      const memberName = path.posix.basename(target);
      archive = tar.create(
        {
          cwd: path.dirname(source),
          portable: true,
          onWriteEntry: (entry) => {
            entry.path = memberName;
          },
        },
        [path.basename(source)],
      ) as unknown as AsyncIterable<Uint8Array>;
    } else {
      const kind = (await lstat(source)).isSocket() ? "a socket" : "not a regular file or directory";
      throw new AgentLaneError("INVALID_ARGUMENT", `copyIn: ${hostPath} is ${kind}`);
    }
    await timed(this.trace, "copyIn", `${traceText(hostPath)} -> ${traceText(sandboxPath)}`, () =>
      this.client.copyIn(this.laneName, destDir, archive),
    );
  }

  async copyFileOut(sandboxPath: string, hostPath: string): Promise<void> {
    this.ensureOpen("copyFileOut");
    await timed(this.trace, "copyFileOut", traceText(sandboxPath), () =>
      this.client.copyFileOut(this.laneName, sandboxPath, hostPath, { maxBytes: this.options.maxCopyOutBytes }),
    );
  }

  async commit(image: string, options: { noWorkspace?: boolean } = {}): Promise<import("./client.js").Image> {
    this.ensureOpen("commit");
    return this.client.commitLane(this.laneName, image, { noWorkspace: options.noWorkspace });
  }

  /**
   * Kill in-flight commands, then destroy the lane: resolves once the VM
   * is gone. Safe to call more than once.
   */
  close(): Promise<void> {
    if (!this.closing) {
      this.isClosed = true;
      this.trace?.summary();
      for (const call of this.inflight) call.cancel(`lane ${this.laneName} closed`);
      this.inflight.clear();
      // DestroyLane on a connection of its own (the audit says "destroyed
      // on request") waits for the VM to go. The owner is closed after it
      // whatever it answered: if the call could not even be made, that
      // alone has the daemon destroy the lane.
      this.closing = this.client.destroyLane(this.laneName).then(
        () => this.owner.close(),
        (err: unknown) => {
          this.owner.close();
          if (err instanceof AgentLaneError && err.code === "NOT_FOUND") return;
          // A later close() can still wait for the destroy the owner's end started.
          this.closing = undefined;
          throw err;
        },
      );
    }
    return this.closing;
  }
}

/**
 * Adapt a NodeJS.ReadableStream to an async iterable without taking it over:
 * stop() detaches the listeners (and pauses the stream again) so that a
 * long-lived stream such as process.stdin is left usable.
 */
function streamChunks(stream: NodeJS.ReadableStream): { iterable: AsyncIterable<Uint8Array>; stop: () => void } {
  const queue: Uint8Array[] = [];
  let ended = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  let stopped = false;
  const onData = (d: Buffer | string) => {
    queue.push(typeof d === "string" ? Buffer.from(d) : d);
    stream.pause();
    wake?.();
  };
  const onEnd = () => {
    ended = true;
    wake?.();
  };
  const onError = (e: unknown) => {
    error = e;
    wake?.();
  };
  const stop = () => {
    if (stopped) return;
    stopped = true;
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("error", onError);
    stream.pause();
    wake?.();
  };
  stream.on("data", onData);
  stream.on("end", onEnd);
  stream.on("error", onError);
  stream.pause();
  const iterable: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (queue.length > 0) {
          yield queue.shift()!;
          continue;
        }
        if (error !== undefined) throw error;
        if (ended || stopped) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
          stream.resume();
        });
        wake = undefined;
      }
    },
  };
  return { iterable, stop };
}
