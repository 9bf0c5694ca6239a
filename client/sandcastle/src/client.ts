/**
 * Minimal client for agent-laned (protocol agentlane.v1, version 1).
 *
 * Wire format (docs/protocol.md): a 4-byte big-endian length followed by one
 * protobuf message; Request from the client, Response from the daemon. One
 * call per connection: connect, hello, one call, read until the terminal
 * message, close.
 */
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { randomBytes } from "node:crypto";
import { writeSync } from "node:fs";
import { open, mkdir, rename, unlink, type FileHandle } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { currentContext, HostError, loadContext, openSsh, parseHost, remoteCommandValid, type Host, type SshStream } from "./transport.js";

export const PROTOCOL_VERSION = 1;
/** Protocol-wide maximum frame payload. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Senders keep data payloads at or below this. */
export const MAX_DATA_CHUNK = 64 * 1024;
/** Bytes a frame adds around a data payload, with room to spare (proto/wire.h). */
const CHUNK_OVERHEAD = 64;
/** Most lanes / events a paged answer is collected to, as in libagentlane. */
export const LIST_MAX = 10000;
export const EVENTS_MAX = 100000;
/** Under $HOME when $AGENT_LANE_SOCKET is unset: WIRE_DEFAULT_SOCKET_REL in proto/wire.h. */
export const DEFAULT_SOCKET_REL = ".agent-lane/run/agent-laned.sock";
const CLIENT_NAME = "@agent-lane/provider-lima/0.1.0";
/** Stop reading the socket once this much decoded data waits for the consumer. */
const QUEUE_HIGH_WATER = 1024 * 1024;

/** The ErrorCode names of agentlane.v1, plus client-side conditions. */
export type ErrorCodeName =
  | "ERROR_CODE_UNSPECIFIED"
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "TOO_LARGE"
  | "DEADLINE_EXCEEDED"
  | "PERMISSION_DENIED"
  | "UNAVAILABLE"
  | "INTERNAL"
  | "VERSION_MISMATCH"
  | "LIMA_FAILED"
  | "CANCELLED"
  | "AMBIGUOUS"
  | "ALREADY_EXISTS";

/** A failure reported by the daemon, or a transport failure on the client side. */
export class AgentLaneError extends Error {
  /** ErrorCode name, e.g. "NOT_FOUND". */
  readonly code: ErrorCodeName | string;
  constructor(code: ErrorCodeName | string, message: string) {
    super(message);
    this.name = "AgentLaneError";
    this.code = code;
  }
}

/**
 * Errors of a call whose request never left this process: the daemon could
 * not be reached, or its hello was refused. Such a call changed nothing in
 * the daemon (a create made no lane), so there is nothing to clean up.
 */
const unsent = new WeakSet<object>();

/** True when `err` failed a call before its request was sent (see `unsent`). */
export function requestNeverSent(err: unknown): boolean {
  return typeof err === "object" && err !== null && unsent.has(err);
}

export type LaneState =
  | "LANE_STATE_UNSPECIFIED"
  | "CREATING"
  | "READY"
  | "DESTROYING"
  | "DESTROYED"
  | "FAILED"
  /** Warm pool: booted, not yet anyone's (only listed with all). */
  | "POOLED";

export interface Label {
  key: string;
  value: string;
}

export interface Lane {
  name: string;
  state: LaneState;
  cpus: number;
  memoryMib: number;
  diskGib: number;
  createdAtMs: number;
  deadlineMs: number;
  idleTimeoutS: number;
  lastActivityMs: number;
  workspace: string;
  error: string;
  endedAtMs: number;
  labels: Label[];
  /** Network policy: "internet", "none" or "allow"; "" for a lane made before policies. */
  network: string;
  /** allow lanes: the hosts (or "*.domain" patterns) its proxy reaches. */
  allow: string[];
  /** The lane kept passwordless guest root (its policy is advisory). */
  sudo: boolean;
  /** "enforced", "advisory" (sudo), "unenforced" (see networkNote), "" while booting. */
  networkPolicy: string;
  networkNote: string;
  /** allow lanes: the port of its proxy on host 127.0.0.1 (192.168.5.2 in the guest). */
  proxyPort: number;
  /** The lane's alias (create --name); "" for none. */
  alias: string;
  /** The lane lives as long as its creator's connection (createOwnedLane, `agent-lanectl run`). */
  owned: boolean;
  /** Its secrets: each one's variable name, the hosts its value may go to and its own headers (never the value). */
  secrets: LaneSecret[];
}

/** A lane secret as the daemon reports it: never its value or its placeholder. */
export interface LaneSecret {
  name: string;
  hosts: string[];
  /**
   * Headers its value may go in besides the default credential headers
   * (Authorization, x-api-key, api-key, x-goog-api-key, private-token,
   * x-auth-token, which are implied): lower case, [] when none.
   */
  headers: string[];
}

/**
 * The default credential headers: the only ones the lane's proxy puts a
 * value in, besides those a secret names (SecretRequest.headers).
 */
export const DEFAULT_CREDENTIAL_HEADERS: readonly string[] = Object.freeze([
  "authorization",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
  "private-token",
  "x-auth-token",
]);

/** Headers never a credential's: the proxy frames, routes or drops them. */
const FORBIDDEN_HEADERS = new Set([
  "host",
  "connection",
  "proxy-connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "content-length",
  "upgrade",
  "expect",
  "proxy-authorization",
  "proxy-authenticate",
  "cookie",
  "set-cookie",
]);

/**
 * Whether a secret may name header (SecretRequest.headers): an HTTP token of
 * 1-64 characters, not a framing, hop-by-hop or cookie header, in any case.
 * The daemon's check (proto/text.c, text_secret_header_valid) is the same.
 */
export function secretHeaderValid(header: unknown): boolean {
  return (
    typeof header === "string" &&
    /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/.test(header) &&
    !FORBIDDEN_HEADERS.has(header.toLowerCase())
  );
}

/** A secret as createLane sends it: the value travels only over the daemon's socket. */
export interface SecretRequest {
  /** The guest variable ([A-Za-z_][A-Za-z0-9_]{0,62}); commands see a placeholder in it. */
  name: string;
  /** The real value (printable ASCII); the lane's proxy puts it in requests to hosts only. */
  value: string;
  /** Host names or "*.example.org" patterns; empty: the daemon's `secret` line for name. */
  hosts?: string[];
  /**
   * Headers the value may go in besides DEFAULT_CREDENTIAL_HEADERS (at most
   * 8; secretHeaderValid); empty: the daemon's `secret_header` line for
   * name, else none.
   */
  headers?: string[];
}

/** A lane's egress policy (agent-lanectl(1), "create --network"). */
export type NetworkMode = "internet" | "none" | "allow";

export interface Limits {
  maxFrameBytes: number;
  maxLanes: number;
  defaultCpus: number;
  maxCpus: number;
  defaultMemoryMib: number;
  maxMemoryMib: number;
  defaultDiskGib: number;
  maxDiskGib: number;
  defaultLifetimeS: number;
  maxLifetimeS: number;
  maxExecTimeoutS: number;
  maxCopyOutBytes: number;
  defaultIdleTimeoutS: number;
}

export interface HelloReply {
  protocolVersion: number;
  daemonVersion: string;
  limits: Limits;
}

export interface CreateLaneRequest {
  cpus?: number;
  memoryMib?: number;
  diskGib?: number;
  /** Hard lifetime in seconds; 0 or absent: the daemon's default. */
  timeoutS?: number;
  idleTimeoutS?: number;
  labels?: Label[];
  /** Clone this image (see buildImage) instead of creating a fresh VM. */
  image?: string;
  /** Network policy; absent: the daemon's default (`network` key). */
  network?: NetworkMode;
  /** With network "allow": the hosts it reaches (absent: the daemon's `allow` key). */
  allow?: string[];
  /** Keep passwordless guest root; the policy is then advisory. */
  sudo?: boolean;
  /**
   * A second name for the lane, unique among live lanes
   * ([a-z0-9][a-z0-9._-]{0,62}, not "al-...", not hex digits alone); every
   * call that takes a lane name takes it while the lane lives. Taken:
   * ALREADY_EXISTS.
   */
  alias?: string;
  /** Credentials the lane uses without holding them (agent-lanectl(1), "--secret"). */
  secrets?: SecretRequest[];
}

/** A provision script: run as root in the image's VM; a #! line picks the interpreter. */
export interface ProvisionScript {
  /** Shown in progress and errors (e.g. the file name). */
  name: string;
  script: string | Uint8Array;
}

export interface BuildImageRequest {
  /** [a-z0-9][a-z0-9._-]{0,62}; absent: named by content ("p-" + 16 hex). */
  name?: string;
  provision?: ProvisionScript[];
  /** Build on top of this image. */
  from?: string;
  /** Install rootless Docker Engine for the lane user. */
  docker?: boolean;
  cpus?: number;
  memoryMib?: number;
  diskGib?: number;
  /**
   * An image of this name built from other inputs is replaced once the new
   * one is ready (as `docker build -t` retags); true refuses instead
   * (FAILED_PRECONDITION).
   */
  noReplace?: boolean;
}

export interface Image {
  name: string;
  /** sha256 of the inputs (hex). */
  id: string;
  from: string;
  docker: boolean;
  cpus: number;
  memoryMib: number;
  diskGib: number;
  scripts: string[];
  createdAtMs: number;
  buildMs: number;
  /** The build found identical inputs and built nothing. */
  cached: boolean;
  inUse: number;
  /** commitLane: the lane whose disk it is ("" for a built image), its alias then, and when. */
  committedFrom: string;
  committedAlias: string;
  committedAtMs: number;
}

export interface Progress {
  phase: string;
  message: string;
}

export interface LaneEvent {
  timeMs: number;
  lane: string;
  event: string;
  detail: string;
}

export interface ExecRequest {
  lane: string;
  /** Exactly one of argv and shell. */
  argv?: Array<string | Uint8Array>;
  /** Run as /bin/sh -c SHELL. */
  shell?: string | Uint8Array;
  /** Guest directory (relative: in the workspace); absent: the workspace. */
  workdir?: string;
  env?: Record<string, string>;
  /**
   * Bytes for the command's stdin (closed after the last byte), or a
   * readable stream (closed at its end). Absent: stdin closed from the start.
   */
  stdin?: string | Uint8Array | AsyncIterable<Uint8Array | string>;
  /** 0 / absent: no per-exec timeout. */
  timeoutMs?: number;
  /**
   * A pseudo-terminal in the guest of this size: the command's stdin, stdout
   * and stderr are the terminal, and all its output arrives on stdout.
   * Follow resizes with ExecCall.resize().
   */
  tty?: { rows: number; cols: number };
}

export type ExecStatus = { code: number; signal?: undefined } | { signal: number; code?: undefined };

export interface ExecHandlers {
  /** Called with each stdout chunk as it arrives. May return a promise to apply backpressure. */
  onStdout?: (data: Buffer) => void | Promise<void>;
  /** Called with each stderr chunk as it arrives. May return a promise to apply backpressure. */
  onStderr?: (data: Buffer) => void | Promise<void>;
}

/** A running exec; cancel() drops the connection, which makes the daemon kill the command's process group. */
export interface ExecCall {
  readonly done: Promise<ExecStatus>;
  cancel(reason?: string): void;
  /** With `tty`: the terminal now has this size (the guest sends SIGWINCH). */
  resize(rows: number, cols: number): void;
}

/** What exec() and runExec() share while the call runs. */
interface ExecControl {
  resize?: (rows: number, cols: number) => void;
  pendingSize?: { rows: number; cols: number };
}

export interface CopyOutBegin {
  kind: "FILE" | "DIRECTORY" | "COPY_KIND_UNSPECIFIED";
  maxBytes: number;
  /** FILE: its permission bits as the guest saw them (0: not known). */
  mode: number;
}

export interface AgentLaneClientOptions {
  /**
   * The daemon as a URL: "ssh://[USER@]HOST[:PORT]" (the daemon of USER on
   * HOST, through the user's own ssh, which runs `agent-lanectl system
   * dial-stdio` there) or "unix:///PATH". Which daemon, as agent-lanectl
   * decides it: host or socketPath, else context, else $AGENT_LANE_HOST or
   * $AGENT_LANE_SOCKET, else $AGENT_LANE_CONTEXT, else the current context
   * (`agent-lanectl context use`), else the local socket.
   */
  host?: string;
  /** A context of agent-lanectl (`agent-lanectl context create NAME --host URL`). */
  context?: string;
  /** ssh hosts: the agent-lanectl to run there (default: agent-lanectl on its non-login PATH). */
  remoteCommand?: string;
  /** Control socket; default $AGENT_LANE_SOCKET or ~/.agent-lane/run/agent-laned.sock. */
  socketPath?: string;
  /** Free text the daemon logs. */
  clientName?: string;
  /** Time to connect and finish the hello exchange (default 30 s). */
  connectTimeoutMs?: number;
}

/** The default control socket path. */
export function defaultSocketPath(): string {
  const fromEnv = process.env.AGENT_LANE_SOCKET;
  if (fromEnv) return fromEnv;
  return path.join(os.homedir(), DEFAULT_SOCKET_REL);
}

// ---------------------------------------------------------------------------
// protobuf schema

interface Schema {
  Request: protobuf.Type;
  Response: protobuf.Type;
}

let schema: Schema | undefined;

function protoPath(): string {
  // dist/client.js → dist/agentlane.proto (copied there by the build).
  return fileURLToPath(new URL("./agentlane.proto", import.meta.url));
}

function getSchema(): Schema {
  if (!schema) {
    const root = protobuf.loadSync(protoPath());
    schema = {
      Request: root.lookupType("agentlane.v1.Request"),
      Response: root.lookupType("agentlane.v1.Response"),
    };
  }
  return schema;
}

const TO_OBJECT: protobuf.IConversionOptions = {
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  oneofs: true,
};

/** A decoded Response: `body` names the member that is set. */
type ResponseObj = { body?: string } & Record<string, any>;

function encodeRequest(req: Record<string, unknown>): Buffer {
  const { Request } = getSchema();
  const msg = Request.fromObject(req);
  const payload = Request.encode(msg).finish();
  const frame = Buffer.allocUnsafe(4 + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  frame.set(payload, 4);
  return frame;
}

function decodeResponse(payload: Buffer): ResponseObj {
  const { Response } = getSchema();
  const msg = Response.decode(payload);
  return Response.toObject(msg, TO_OBJECT) as ResponseObj;
}

function asBuffer(v: unknown): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) return Buffer.from(v);
  return Buffer.alloc(0);
}

function toLane(o: any): Lane {
  return {
    name: o.name,
    state: o.state,
    cpus: o.cpus,
    memoryMib: o.memoryMib,
    diskGib: o.diskGib,
    createdAtMs: o.createdAtMs,
    deadlineMs: o.deadlineMs,
    idleTimeoutS: o.idleTimeoutS,
    lastActivityMs: o.lastActivityMs,
    workspace: o.workspace,
    error: o.error,
    endedAtMs: o.endedAtMs,
    labels: (o.labels ?? []).map((l: any) => ({ key: l.key, value: l.value })),
    network: o.network ?? "",
    allow: [...(o.allow ?? [])],
    sudo: Boolean(o.sudo),
    networkPolicy: o.networkPolicy ?? "",
    networkNote: o.networkNote ?? "",
    proxyPort: o.proxyPort ?? 0,
    alias: o.alias ?? "",
    owned: Boolean(o.owned),
    secrets: (o.secrets ?? []).map((s: any) => ({
      name: s.name ?? "",
      hosts: [...(s.hosts ?? [])],
      headers: [...(s.headers ?? [])],
    })),
  };
}

function errorFrom(body: any): AgentLaneError {
  return new AgentLaneError(String(body.code ?? "ERROR_CODE_UNSPECIFIED"), String(body.message ?? ""));
}

// ---------------------------------------------------------------------------
// one connection

/**
 * One framed connection. Incoming frames are queued; the socket is paused
 * while more than QUEUE_HIGH_WATER bytes wait for the consumer, so a slow
 * consumer slows the daemon down instead of growing memory.
 */
class Connection {
  /** What the daemon's frames arrive on, and what ours go to: one socket locally, ssh's stdout and stdin over ssh. */
  private readonly sock: net.Socket;
  private readonly out: net.Socket;
  /** Over ssh: the child, for why the connection ended. */
  private readonly ssh: SshStream | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly queue: Array<{ m: ResponseObj; size: number }> = [];
  private queuedBytes = 0;
  private waiter: { resolve: (m: ResponseObj | null) => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;
  private ended = false;
  private closed = false;
  maxFrameBytes = MAX_FRAME_BYTES;

  /** Data bytes per frame under the cap the daemon announced (as low as 4096). */
  dataChunk(): number {
    return Math.max(CHUNK_OVERHEAD, Math.min(MAX_DATA_CHUNK, this.maxFrameBytes - CHUNK_OVERHEAD));
  }
  /** The daemon stopped reading (a direct write failed with EPIPE); its answer may still be readable. */
  private peerGone = false;
  /** Kinds of Response body received so far (queued or consumed). */
  readonly seen = new Set<string>();

  /** True once the daemon sent one of `bodies`, closed its side, or the connection failed. */
  answered(bodies: readonly string[]): boolean {
    return this.ended || this.failure !== undefined || bodies.some((b) => this.seen.has(b));
  }

  private constructor(sock: net.Socket, out: net.Socket = sock, ssh?: SshStream) {
    this.sock = sock;
    this.out = out;
    this.ssh = ssh;
    if (out !== sock) {
      out.on("error", (err) => {
        if (!this.failure) this.failure = new AgentLaneError("UNAVAILABLE", `agent-laned connection failed: ${err.message}`);
        this.wake();
      });
    }
    sock.on("data", (chunk: Buffer) => this.onData(chunk));
    sock.on("end", () => {
      this.ended = true;
      this.wake();
    });
    sock.on("close", () => {
      this.ended = true;
      this.closed = true;
      this.wake();
    });
    sock.on("error", (err) => {
      if (!this.failure) {
        this.failure = new AgentLaneError("UNAVAILABLE", `agent-laned connection failed: ${err.message}`);
      }
      this.wake();
    });
  }

  static connect(socketPath: string, timeoutMs: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const sock = net.createConnection({ path: socketPath });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new AgentLaneError("UNAVAILABLE", `timed out connecting to agent-laned at ${socketPath}`));
      }, timeoutMs);
      const onError = (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        sock.destroy();
        const hint = err.code === "ENOENT" || err.code === "ECONNREFUSED" ? " (is agent-laned running?)" : "";
        reject(new AgentLaneError("UNAVAILABLE", `cannot connect to agent-laned at ${socketPath}: ${err.message}${hint}`));
      };
      sock.once("error", onError);
      sock.once("connect", () => {
        clearTimeout(timer);
        sock.off("error", onError);
        resolve(new Connection(sock));
      });
    });
  }

  /** Through the user's ssh to `agent-lanectl system dial-stdio` on the host. */
  static overSsh(host: Extract<Host, { kind: "ssh" }>, remoteCommand: string): Connection {
    const ssh = openSsh(host, remoteCommand);
    return new Connection(ssh.input, ssh.output, ssh);
  }

  /** True over ssh: the hello must be checked here, not by a local daemon. */
  get remote(): boolean {
    return this.ssh !== undefined;
  }

  /**
   * The error for a connection that ended before the answer: over ssh,
   * UNAVAILABLE in ssh's own words (it cannot connect, authenticate, or
   * died), once ssh has exited.
   */
  async lost(what: string): Promise<AgentLaneError> {
    if (this.ssh) return new AgentLaneError("UNAVAILABLE", `${await this.ssh.explain()} (${what})`);
    return this.failure instanceof AgentLaneError ? this.failure : new AgentLaneError("UNAVAILABLE", what);
  }

  private onData(chunk: Buffer): void {
    if (this.failure) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    while (this.pendingBytes >= 4) {
      const head = this.peek(4);
      const len = head.readUInt32BE(0);
      if (len > MAX_FRAME_BYTES) {
        this.fail(new AgentLaneError("UNAVAILABLE", `agent-laned sent a ${len}-byte frame (protocol maximum ${MAX_FRAME_BYTES})`));
        return;
      }
      if (this.pendingBytes < 4 + len) break;
      const frame = this.take(4 + len).subarray(4);
      let msg: ResponseObj;
      try {
        msg = decodeResponse(frame);
      } catch (err) {
        this.fail(new AgentLaneError("UNAVAILABLE", `agent-laned sent an undecodable frame: ${(err as Error).message}`));
        return;
      }
      if (msg.body) this.seen.add(msg.body);
      this.queue.push({ m: msg, size: len });
      this.queuedBytes += len;
    }
    if (this.queuedBytes > QUEUE_HIGH_WATER && !this.sock.isPaused()) this.sock.pause();
    this.wake();
  }

  private peek(n: number): Buffer {
    if (this.pending[0]!.length >= n) return this.pending[0]!.subarray(0, n);
    const all = Buffer.concat(this.pending);
    this.pending = [all];
    return all.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.pending = rest.length ? [rest] : [];
    this.pendingBytes -= n;
    // Copy so that a small frame does not pin a large receive buffer.
    return rest.length > 0 ? Buffer.from(out) : out;
  }

  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    if (this.queue.length > 0) {
      this.waiter = undefined;
      w.resolve(this.shift());
    } else if (this.failure) {
      this.waiter = undefined;
      w.reject(this.failure);
    } else if (this.ended) {
      this.waiter = undefined;
      w.resolve(null);
    }
  }

  private shift(): ResponseObj {
    const { m, size } = this.queue.shift()!;
    this.queuedBytes -= size;
    if (this.queuedBytes < QUEUE_HIGH_WATER / 2 && this.sock.isPaused() && !this.closed) this.sock.resume();
    return m;
  }

  /** The next response, or null once the daemon closed the connection. */
  next(): Promise<ResponseObj | null> {
    if (this.queue.length > 0) return Promise.resolve(this.shift());
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(null);
    if (this.waiter) return Promise.reject(new Error("concurrent reads on one agent-laned connection"));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The next response; a closed connection is an error. */
  async expect(what: string): Promise<ResponseObj> {
    let m: ResponseObj | null;
    try {
      m = await this.next();
    } catch (err) {
      if (this.ssh && !(err instanceof AgentLaneError && err.code === "CANCELLED")) {
        throw await this.lost(`waiting for ${what}`);
      }
      throw err;
    }
    if (!m) {
      if (this.ssh) throw await this.lost(`waiting for ${what}`);
      throw this.failure ?? new AgentLaneError("UNAVAILABLE", `agent-laned closed the connection while waiting for ${what}`);
    }
    return m;
  }

  /** Write one frame; resolves once the socket accepted it (respecting backpressure). */
  async send(req: Record<string, unknown>): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.closed) throw new AgentLaneError("UNAVAILABLE", "agent-laned connection is closed");
    const frame = encodeRequest(req);
    if (frame.length - 4 > this.maxFrameBytes) {
      throw new AgentLaneError(
        "TOO_LARGE",
        `request frame of ${frame.length - 4} bytes exceeds the daemon's limit of ${this.maxFrameBytes}`,
      );
    }
    // A frame may carry secrets (an exec's environment, a create's
    // secrets): zeroed once the transport has taken it.
    const ok = this.out.write(frame, () => frame.fill(0));
    if (!ok) await this.drain();
  }

  /**
   * Write one frame of a stream the daemon may stop accepting at any moment
   * (stdin, copy-in data). The daemon closes the connection right after its
   * final answer, even when it has not read everything we sent. A failed
   * write on a net.Socket destroys it at once, dropping an answer that is
   * already waiting to be read; so these frames are written straight to the
   * descriptor, where EPIPE is only a return value and reading goes on. A
   * full socket buffer is retried with a short backoff. Resolves false once
   * the daemon no longer reads (stop sending).
   */
  async sendStreamed(req: Record<string, unknown>): Promise<boolean> {
    if (this.peerGone) return false;
    const frame = encodeRequest(req);
    if (this.out.writableLength > 0) await this.drain();
    let off = 0;
    let backoff = 1;
    while (off < frame.length) {
      if (this.failure) throw this.failure;
      // Re-checked before every write: once the socket is destroyed its
      // descriptor number may belong to something else.
      const fd = this.out.destroyed ? undefined : (this.out as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (this.ended || this.closed) return false;
      if (typeof fd !== "number" || fd < 0) {
        // No descriptor to write to (not a Unix platform): plain socket write.
        if (!this.out.write(frame.subarray(off))) await this.drain();
        return !this.peerGone;
      }
      try {
        off += writeSync(fd, frame, off, frame.length - off);
        backoff = 1;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EPIPE" || code === "ECONNRESET") {
          this.peerGone = true;
          return false;
        }
        if (code !== "EAGAIN" && code !== "EWOULDBLOCK") throw err;
        await delay(backoff);
        backoff = Math.min(backoff * 2, 50);
      }
    }
    return true;
  }

  private drain(): Promise<void> {
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        this.out.off("drain", onDrain);
        this.out.off("close", onClose);
      };
      const onDrain = () => {
        cleanup();
        resolve();
      };
      const onClose = () => {
        cleanup();
        reject(this.failure ?? new AgentLaneError("UNAVAILABLE", "agent-laned closed the connection"));
      };
      this.out.on("drain", onDrain);
      this.out.on("close", onClose);
    });
  }

  fail(err: Error): void {
    if (!this.failure) this.failure = err;
    this.destroy();
    this.wake();
  }

  destroy(): void {
    this.sock.destroy();
    this.out.destroy();
    this.ssh?.close();
  }

  /**
   * Keep the connection without keeping Node running for it: the process
   * may exit with it open, and the kernel then closes it.
   */
  unref(): void {
    this.sock.unref();
  }

  /** Resolves once the socket has closed, whoever closed it. */
  whenClosed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.sock.once("close", () => resolve()));
  }
}

/**
 * The connection an owned lane lives as long as (createOwnedLane). The
 * daemon destroys the lane when it closes, for whatever reason: close(),
 * or the process ending in any way, SIGKILL included, since the kernel
 * closes the socket then. It does not keep Node running.
 */
export interface LaneOwner {
  /** Close the connection: the daemon starts destroying the lane. */
  close(): void;
  /** Resolves when the connection has closed: the lane has ended, or the daemon went away. */
  readonly closed: Promise<void>;
}

// ---------------------------------------------------------------------------
// client

export class AgentLaneClient {
  /** The local socket, or for an ssh host its URL. */
  readonly socketPath: string;
  /** Where the daemon is: "unix:///PATH" or "ssh://...". */
  readonly host: string;
  private readonly target: Host;
  private readonly remoteCommand: string;
  private readonly clientName: string;
  private readonly connectTimeoutMs: number;

  constructor(options: AgentLaneClientOptions = {}) {
    const { target, remoteCommand } = resolveTarget(options);
    this.target = target;
    this.remoteCommand = remoteCommand;
    this.host = target.url;
    this.socketPath = target.kind === "unix" ? target.path : target.url;
    this.clientName = options.clientName ?? CLIENT_NAME;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
  }

  /** Connect and exchange hellos. The caller owns the connection. */
  private async open(): Promise<{ conn: Connection; hello: HelloReply }> {
    try {
      return await this.openUnmarked();
    } catch (err) {
      if (typeof err === "object" && err !== null) unsent.add(err);
      throw err;
    }
  }

  private async openUnmarked(): Promise<{ conn: Connection; hello: HelloReply }> {
    const conn =
      this.target.kind === "ssh"
        ? Connection.overSsh(this.target, this.remoteCommand)
        : await Connection.connect(this.socketPath, this.connectTimeoutMs);
    try {
      await conn.send({ hello: { protocolVersion: PROTOCOL_VERSION, client: this.clientName } });
      const m = await withTimeout(conn.expect("the hello reply"), this.connectTimeoutMs, () =>
        conn.destroy(),
      );
      if (m.body === "error") throw errorFrom(m.error);
      if (m.body !== "hello") throw new AgentLaneError("UNAVAILABLE", `agent-laned answered the hello with ${m.body}`);
      const h = m.hello;
      if (h.protocolVersion !== PROTOCOL_VERSION) {
        // Over ssh the other end is another installation: a precondition
        // of the setup, named as libagentlane names it.
        if (conn.remote) {
          throw new AgentLaneError(
            "FAILED_PRECONDITION",
            `${this.host}: agent-laned ${h.daemonVersion} speaks protocol version ${h.protocolVersion}, this client ${PROTOCOL_VERSION}`,
          );
        }
        throw new AgentLaneError("VERSION_MISMATCH", `agent-laned speaks protocol ${h.protocolVersion}, this client ${PROTOCOL_VERSION}`);
      }
      const limits: Limits = { ...(h.limits ?? {}) };
      if (limits.maxFrameBytes > 0) conn.maxFrameBytes = Math.min(limits.maxFrameBytes, MAX_FRAME_BYTES);
      return { conn, hello: { protocolVersion: h.protocolVersion, daemonVersion: h.daemonVersion, limits } };
    } catch (err) {
      conn.destroy();
      throw err;
    }
  }

  /** A unary call: send `req`, return the single answer of kind `want`. */
  private async unary(req: Record<string, unknown>, want: string): Promise<any> {
    const { conn } = await this.open();
    try {
      await conn.send(req);
      const m = await conn.expect(`a ${want} reply`);
      if (m.body === "error") throw errorFrom(m.error);
      if (m.body !== want) throw new AgentLaneError("UNAVAILABLE", `agent-laned answered with ${m.body}, expected ${want}`);
      return m[want];
    } finally {
      conn.destroy();
    }
  }

  /** Hello only: the daemon's version and limits. */
  async hello(): Promise<HelloReply> {
    const { conn, hello } = await this.open();
    conn.destroy();
    return hello;
  }

  /**
   * Create a lane and wait until it is READY. `onProgress` sees every
   * Progress message; the first (`registered`) carries the lane name.
   * `signal` aborts the wait (the daemon keeps creating the lane: destroy it).
   */
  async createLane(
    req: CreateLaneRequest,
    opts: { onProgress?: (p: Progress) => void; signal?: AbortSignal } = {},
  ): Promise<Lane> {
    return (await this.create(req, opts, false)).lane;
  }

  /**
   * As createLane, but the lane is owned by the returned connection
   * (`CreateLane{owned}`, as `agent-lanectl run` makes them): the daemon
   * destroys the lane as soon as the owner closes, by owner.close() or
   * because this process ended, however it ended. Calls on the lane use
   * connections of their own; the owner only stays open.
   */
  async createOwnedLane(
    req: CreateLaneRequest,
    opts: { onProgress?: (p: Progress) => void; signal?: AbortSignal } = {},
  ): Promise<{ lane: Lane; owner: LaneOwner }> {
    const { lane, conn } = await this.create(req, opts, true);
    const c = conn!;
    c.unref();
    return { lane, owner: { close: () => c.destroy(), closed: c.whenClosed() } };
  }

  private async create(
    req: CreateLaneRequest,
    opts: { onProgress?: (p: Progress) => void; signal?: AbortSignal },
    owned: boolean,
  ): Promise<{ lane: Lane; conn?: Connection }> {
    const { conn } = await this.open();
    let keep = false;
    const onAbort = () => {
      const reason = opts.signal?.reason;
      conn.fail(reason instanceof Error ? reason : new AgentLaneError("CANCELLED", "lane creation was abandoned by the client"));
    };
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const secretValues = (req.secrets ?? []).map((s) => Buffer.from(s.value, "utf8"));
    try {
      await conn.send({
        createLane: {
          cpus: req.cpus ?? 0,
          memoryMib: req.memoryMib ?? 0,
          diskGib: req.diskGib ?? 0,
          timeoutS: req.timeoutS ?? 0,
          idleTimeoutS: req.idleTimeoutS ?? 0,
          labels: req.labels ?? [],
          image: req.image ?? "",
          network: req.network ?? "",
          allow: req.allow ?? [],
          sudo: req.sudo ?? false,
          alias: req.alias ?? "",
          secrets: (req.secrets ?? []).map((s, i) => ({
            name: s.name,
            value: secretValues[i],
            hosts: s.hosts ?? [],
            headers: s.headers ?? [],
          })),
          owned,
        },
      });
      for (;;) {
        const m = await conn.expect("the created lane");
        if (m.body === "progress") {
          opts.onProgress?.({ phase: m.progress.phase, message: m.progress.message });
          continue;
        }
        if (m.body === "error") throw errorFrom(m.error);
        if (m.body === "lane") {
          keep = owned;
          return { lane: toLane(m.lane), conn: owned ? conn : undefined };
        }
        throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during CreateLane`);
      }
    } finally {
      for (const v of secretValues) v.fill(0);
      opts.signal?.removeEventListener("abort", onAbort);
      if (!keep) conn.destroy();
    }
  }

  /**
   * Build an image, or find the identical one (`cached`). `onProgress` sees
   * the phases, `onOutput` the provision scripts' output. Aborting `signal`
   * closes the connection, which cancels the build: the daemon deletes the
   * half-built VM.
   */
  async buildImage(
    req: BuildImageRequest,
    opts: {
      onProgress?: (p: Progress) => void;
      onOutput?: (stream: "stdout" | "stderr", data: Buffer) => void;
      signal?: AbortSignal;
    } = {},
  ): Promise<Image> {
    const { conn } = await this.open();
    const onAbort = () => {
      const reason = opts.signal?.reason;
      conn.fail(reason instanceof Error ? reason : new AgentLaneError("CANCELLED", "image build cancelled by the client"));
    };
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await conn.send({
        buildImage: {
          name: req.name ?? "",
          provision: (req.provision ?? []).map((p) => ({
            name: p.name,
            script: typeof p.script === "string" ? Buffer.from(p.script, "utf8") : Buffer.from(p.script),
          })),
          from: req.from ?? "",
          docker: req.docker ?? false,
          cpus: req.cpus ?? 0,
          memoryMib: req.memoryMib ?? 0,
          diskGib: req.diskGib ?? 0,
          noReplace: req.noReplace ?? false,
        },
      });
      for (;;) {
        const m = await conn.expect("the built image");
        if (m.body === "progress") {
          opts.onProgress?.({ phase: m.progress.phase, message: m.progress.message });
          continue;
        }
        if (m.body === "execOutput") {
          const stream = m.execOutput.stream === "STDERR" || m.execOutput.stream === 2 ? "stderr" : "stdout";
          opts.onOutput?.(stream, Buffer.from(m.execOutput.data ?? []));
          continue;
        }
        if (m.body === "error") throw errorFrom(m.error);
        if (m.body === "image") return toImage(m.image);
        throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during BuildImage`);
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      conn.destroy();
    }
  }

  /**
   * Commit a ready lane's disk as image `image` (agent-lanectl commit): the
   * lane stays ready, but its VM is stopped, cloned and started again, and
   * its execs meanwhile fail with UNAVAILABLE. The image holds none of the
   * lane's CA, ssh host keys, machine id, logs or audit. Aborting `signal`
   * stops the wait, not the commit.
   */
  async commitLane(
    lane: string,
    image: string,
    opts: { noWorkspace?: boolean; onProgress?: (p: Progress) => void; signal?: AbortSignal } = {},
  ): Promise<Image> {
    const { conn } = await this.open();
    const onAbort = () => {
      const reason = opts.signal?.reason;
      conn.fail(reason instanceof Error ? reason : new AgentLaneError("CANCELLED", "stopped waiting for the commit"));
    };
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await conn.send({ commitLane: { lane, image, noWorkspace: opts.noWorkspace ?? false } });
      for (;;) {
        const m = await conn.expect("the committed image");
        if (m.body === "progress") {
          opts.onProgress?.({ phase: m.progress.phase, message: m.progress.message });
          continue;
        }
        if (m.body === "error") throw errorFrom(m.error);
        if (m.body === "image") return toImage(m.image);
        throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during CommitLane`);
      }
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      conn.destroy();
    }
  }

  async listImages(): Promise<Image[]> {
    const list = await this.unary({ listImages: {} }, "imageList");
    return (list.images ?? []).map(toImage);
  }

  async getImage(name: string): Promise<Image> {
    return toImage(await this.unary({ getImage: { name } }, "image"));
  }

  /** Remove an image and its VM; FAILED_PRECONDITION while a clone or build uses it. */
  async removeImage(name: string): Promise<Image> {
    return toImage(await this.unary({ removeImage: { name } }, "image"));
  }

  async getLane(name: string): Promise<Lane> {
    return toLane(await this.unary({ getLane: { name } }, "lane"));
  }

  async listLanes(all = false): Promise<Lane[]> {
    const lanes = await this.paged((pageToken) => ({ listLanes: { all, pageToken } }), "laneList", "lanes", LIST_MAX);
    return lanes.map(toLane);
  }

  /**
   * A paged answer: the call is repeated, each time on a new connection, with
   * the daemon's nextPageToken until it comes back empty. More than `max`
   * items is TOO_LARGE, never a silent cut.
   */
  private async paged(
    build: (pageToken: string) => Record<string, unknown>,
    want: string,
    items: string,
    max: number,
  ): Promise<any[]> {
    const out: any[] = [];
    let token = "";
    for (;;) {
      const list = await this.unary(build(token), want);
      const got: any[] = list[items] ?? [];
      if (got.length > max - out.length) {
        throw new AgentLaneError("TOO_LARGE", `more than ${max} ${items}: the answer is not collected in part`);
      }
      out.push(...got);
      const next: string = list.nextPageToken ?? "";
      if (next === "") return out;
      if (got.length === 0) {
        throw new AgentLaneError("UNAVAILABLE", `agent-laned sent an empty page of ${items} with a continuation token`);
      }
      token = next;
    }
  }

  /** Destroy a lane; resolves with its final state once the VM is gone. Idempotent on the daemon side. */
  async destroyLane(name: string): Promise<Lane> {
    return toLane(await this.unary({ destroyLane: { name } }, "lane"));
  }

  async extendLane(name: string, byS: number): Promise<{ lane: Lane; capped: boolean }> {
    const e = await this.unary({ extendLane: { name, byS } }, "extended");
    return { lane: toLane(e.lane), capped: Boolean(e.capped) };
  }

  async getEvents(lane: string): Promise<LaneEvent[]> {
    const events = await this.paged((pageToken) => ({ getEvents: { lane, pageToken } }), "eventList", "events", EVENTS_MAX);
    return events.map((e: any) => ({ timeMs: e.timeMs, lane: e.lane, event: e.event, detail: e.detail }));
  }

  /**
   * Run a command in a lane, streaming its output to `handlers`. The
   * returned call resolves with the exit status (a non-zero exit is not an
   * error) and rejects with AgentLaneError for daemon errors (NOT_FOUND
   * workdir, DEADLINE_EXCEEDED, CANCELLED, ...) or when cancelled.
   */
  exec(req: ExecRequest, handlers: ExecHandlers = {}): ExecCall {
    let conn: Connection | undefined;
    let cancelled: AgentLaneError | undefined;
    const cancel = (reason = "exec cancelled by the client") => {
      if (cancelled) return;
      cancelled = new AgentLaneError("CANCELLED", reason);
      conn?.fail(cancelled);
    };
    const control: ExecControl = {};
    const done = (async (): Promise<ExecStatus> => {
      const opened = await this.open();
      conn = opened.conn;
      if (cancelled) conn.fail(cancelled);
      try {
        return await runExec(conn, req, handlers, control);
      } finally {
        conn.destroy();
      }
    })();
    const resize = (rows: number, cols: number) => {
      if (!req.tty) return;
      if (control.resize) control.resize(rows, cols);
      else control.pendingSize = { rows, cols };
    };
    return { done, cancel, resize };
  }

  /**
   * Send a tar stream (POSIX ustar or pax) to be extracted under `destDir`
   * (created if missing). Resolves with the number of bytes delivered.
   */
  async copyIn(lane: string, destDir: string, tarStream: AsyncIterable<Uint8Array | string>): Promise<number> {
    const { conn } = await this.open();
    try {
      await conn.send({ copyIn: { lane, destDir } });
      // The daemon may answer (with an error) before the stream ends, so
      // read concurrently with sending.
      const answer = conn.expect("the copy-in result");
      answer.catch(() => undefined);
      const terminal = ["copyInDone", "error"];
      // Yield before each frame so that an early answer (an error) is read
      // before writing into a connection the daemon is closing.
      const answered = async () => {
        await new Promise((r) => setImmediate(r));
        return conn.answered(terminal);
      };
      try {
        outer: for await (const piece of tarStream) {
          const buf = typeof piece === "string" ? Buffer.from(piece) : asBuffer(piece);
          const chunk = conn.dataChunk();
          for (let off = 0; off < buf.length; off += chunk) {
            if (await answered()) break outer;
            if (!(await conn.sendStreamed({ data: { data: buf.subarray(off, off + chunk) } }))) break outer;
          }
        }
        if (!(await answered())) await conn.sendStreamed({ data: { eof: true } });
      } catch (err) {
        // A send failure usually means the daemon already answered; prefer its answer.
        const m = await Promise.race([answer.catch(() => undefined), delay(1000)]);
        if (m && m.body === "error") throw errorFrom(m.error);
        throw err;
      }
      const m = await answer;
      if (m.body === "error") throw errorFrom(m.error);
      if (m.body !== "copyInDone") throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during CopyIn`);
      return Number(m.copyInDone.bytes);
    } finally {
      conn.destroy();
    }
  }

  /**
   * Stream a guest file or directory out of a lane. `onBegin` sees the kind
   * before any data and may throw to refuse it; `onData` receives the raw
   * bytes (file contents, or a tar stream for a directory) and may return a
   * promise for backpressure. Everything received is hostile input.
   */
  async copyOut(
    lane: string,
    guestPath: string,
    opts: {
      maxBytes?: number;
      onBegin?: (b: CopyOutBegin) => void | Promise<void>;
      onData: (data: Buffer) => void | Promise<void>;
    },
  ): Promise<number> {
    const { conn } = await this.open();
    try {
      await conn.send({ copyOut: { lane, path: guestPath, maxBytes: opts.maxBytes ?? 0 } });
      const first = await conn.expect("the copy-out header");
      if (first.body === "error") throw errorFrom(first.error);
      if (first.body !== "copyOutBegin") throw new AgentLaneError("UNAVAILABLE", `unexpected ${first.body} during CopyOut`);
      const begin: CopyOutBegin = {
        kind: first.copyOutBegin.kind,
        maxBytes: Number(first.copyOutBegin.maxBytes),
        mode: Number(first.copyOutBegin.mode ?? 0) & 0o777,
      };
      await opts.onBegin?.(begin);
      let received = 0;
      for (;;) {
        const m = await conn.expect("copy-out data");
        if (m.body === "data") {
          const data = asBuffer(m.data.data);
          received += data.length;
          if (begin.maxBytes > 0 && received > begin.maxBytes) {
            throw new AgentLaneError("TOO_LARGE", `copy-out of ${guestPath} passed its bound of ${begin.maxBytes} bytes`);
          }
          if (data.length) await opts.onData(data);
          continue;
        }
        if (m.body === "copyOutDone") {
          const total = Number(m.copyOutDone.bytes);
          if (total !== received) {
            throw new AgentLaneError("UNAVAILABLE", `copy-out of ${guestPath}: daemon reported ${total} bytes, received ${received}`);
          }
          return received;
        }
        if (m.body === "error") throw errorFrom(m.error);
        throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during CopyOut`);
      }
    } finally {
      conn.destroy();
    }
  }

  /**
   * Copy one regular guest file to `hostPath`: the bytes go to an O_EXCL
   * temporary file in the destination directory (created if missing), which
   * is fsynced and renamed over `hostPath` only after the daemon confirmed
   * the whole file; it gets the guest file's mode less the umask. On any
   * failure the temporary file is removed. A guest directory is refused.
   */
  async copyFileOut(lane: string, guestPath: string, hostPath: string, opts: { maxBytes?: number } = {}): Promise<number> {
    const dest = path.resolve(hostPath);
    const dir = path.dirname(dest);
    await mkdir(dir, { recursive: true });
    let fh: FileHandle | undefined;
    let tmp: string | undefined;
    let renamed = false;
    try {
      const n = await this.copyOut(lane, guestPath, {
        maxBytes: opts.maxBytes,
        onBegin: async (b) => {
          if (b.kind !== "FILE") {
            throw new AgentLaneError(
              "INVALID_ARGUMENT",
              b.kind === "DIRECTORY"
                ? `copyFileOut: ${guestPath} is a directory in the lane; only single regular files can be copied out`
                : `copyFileOut: ${guestPath} is not a regular file (${b.kind})`,
            );
          }
          tmp = path.join(dir, `.${path.basename(dest)}.agentlane-${randomBytes(6).toString("hex")}.tmp`);
          // The guest file's permission bits (an untracked script stays
          // executable), less the umask, as open() applies it.
          fh = await open(tmp, "wx", b.mode !== 0 ? b.mode : 0o666);
        },
        onData: async (data) => {
          let off = 0;
          while (off < data.length) {
            const { bytesWritten } = await fh!.write(data, off, data.length - off);
            off += bytesWritten;
          }
        },
      });
      if (!fh) throw new AgentLaneError("UNAVAILABLE", `copy-out of ${guestPath} ended without data header`);
      await fh.sync();
      await fh.close();
      fh = undefined;
      await rename(tmp!, dest);
      renamed = true;
      await syncDir(dir);
      return n;
    } finally {
      if (fh) await fh.close().catch(() => undefined);
      if (tmp && !renamed) await unlink(tmp).catch(() => undefined);
    }
  }
}

/**
 * Which daemon, as agent-lanectl decides it (agent-lanectl(1), CONTEXTS):
 * host or socketPath, else context, else $AGENT_LANE_HOST or
 * $AGENT_LANE_SOCKET, else $AGENT_LANE_CONTEXT, else the current context,
 * else the local socket.
 */
function resolveTarget(o: AgentLaneClientOptions): { target: Host; remoteCommand: string } {
  const bad = (msg: string) => new AgentLaneError("INVALID_ARGUMENT", msg);
  let remote = o.remoteCommand;
  const fromUrl = (url: string, where: string): Host => {
    try {
      return parseHost(url);
    } catch (err) {
      if (err instanceof HostError) throw bad(`${where}: ${err.message}`);
      throw err;
    }
  };
  const fromContext = (name: string, where: string): Host | undefined => {
    if (name === "default") return undefined;
    let c;
    try {
      c = loadContext(name);
    } catch (err) {
      if (err instanceof HostError) throw bad(`${where}: ${err.message}`);
      throw err;
    }
    if (!c) throw bad(`${where}: no context "${name}" (see agent-lanectl context ls)`);
    remote ??= c.remoteCommand || undefined;
    return fromUrl(c.host, `context ${name}`);
  };
  if (o.host !== undefined && o.socketPath !== undefined) throw bad("give host or socketPath, not both");
  if (o.context !== undefined && (o.host !== undefined || o.socketPath !== undefined)) throw bad("give context or host/socketPath, not both");
  let target: Host | undefined;
  if (o.host !== undefined) target = fromUrl(o.host, "host");
  else if (o.socketPath !== undefined) target = { kind: "unix", path: o.socketPath, url: `unix://${o.socketPath}` };
  else if (o.context !== undefined) target = fromContext(o.context, "context");
  else if (process.env.AGENT_LANE_HOST) target = fromUrl(process.env.AGENT_LANE_HOST, "$AGENT_LANE_HOST");
  else if (process.env.AGENT_LANE_SOCKET) target = undefined;
  else if (process.env.AGENT_LANE_CONTEXT) target = fromContext(process.env.AGENT_LANE_CONTEXT, "$AGENT_LANE_CONTEXT");
  else {
    let cur: string;
    try {
      cur = currentContext();
    } catch (err) {
      if (err instanceof HostError) throw bad(`the current context: ${err.message}`);
      throw err;
    }
    target = fromContext(cur, "the current context");
  }
  target ??= { kind: "unix", path: defaultSocketPath(), url: `unix://${defaultSocketPath()}` };
  const remoteCommand = remote ?? "agent-lanectl";
  if (target.kind === "ssh" && !remoteCommandValid(remoteCommand)) {
    throw bad(`remoteCommand ${JSON.stringify(remoteCommand)}: a path of [A-Za-z0-9._+/-] (or ~/...), not beginning with "-"`);
  }
  return { target, remoteCommand };
}

function toImage(m: any): Image {
  return {
    name: m.name ?? "",
    id: m.id ?? "",
    from: m.from ?? "",
    docker: Boolean(m.docker),
    cpus: Number(m.cpus ?? 0),
    memoryMib: Number(m.memoryMib ?? 0),
    diskGib: Number(m.diskGib ?? 0),
    scripts: [...(m.scripts ?? [])],
    createdAtMs: Number(m.createdAtMs ?? 0),
    buildMs: Number(m.buildMs ?? 0),
    cached: Boolean(m.cached),
    inUse: Number(m.inUse ?? 0),
    committedFrom: m.committedFrom ?? "",
    committedAlias: m.committedAlias ?? "",
    committedAtMs: Number(m.committedAtMs ?? 0),
  };
}

async function syncDir(dir: string): Promise<void> {
  let d: FileHandle | undefined;
  try {
    d = await open(dir, "r");
    await d.sync();
  } catch {
    // Best effort: some filesystems refuse fsync on directories.
  } finally {
    await d?.close().catch(() => undefined);
  }
}

/** Terminal sizes as the daemon takes them: whole numbers 1..65535. */
function windowSize(rows: number, cols: number): { rows: number; cols: number } {
  const clamp = (n: number) => Math.min(65535, Math.max(1, Math.floor(Number.isFinite(n) ? n : 1)));
  return { rows: clamp(rows), cols: clamp(cols) };
}

async function runExec(conn: Connection, req: ExecRequest, handlers: ExecHandlers, control: ExecControl = {}): Promise<ExecStatus> {
  const hasArgv = req.argv !== undefined;
  const hasShell = req.shell !== undefined;
  if (hasArgv === hasShell) throw new AgentLaneError("INVALID_ARGUMENT", "exec needs exactly one of argv and shell");
  const env = Object.entries(req.env ?? {}).map(([name, value]) => ({ name, value: Buffer.from(value, "utf8") }));
  const toBytes = (s: string | Uint8Array) => (typeof s === "string" ? Buffer.from(s, "utf8") : asBuffer(s));
  await conn.send({
    exec: {
      lane: req.lane,
      argv: hasArgv ? req.argv!.map(toBytes) : [],
      shell: hasShell ? toBytes(req.shell!) : Buffer.alloc(0),
      workdir: req.workdir ?? "",
      env,
      stdin: req.stdin !== undefined,
      timeoutMs: req.timeoutMs ?? 0,
      ...(req.tty ? { tty: true, window: windowSize(req.tty.rows, req.tty.cols) } : {}),
    },
  });

  let finished = false;
  let stdinError: unknown;
  // Stdin and resizes share the connection: one frame at a time.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = (r: Record<string, unknown>): Promise<boolean> => {
    const p = chain.then(() => conn.sendStreamed(r));
    chain = p.catch(() => false);
    return p;
  };
  if (req.tty) {
    control.resize = (rows, cols) => {
      if (finished || conn.answered(EXEC_TERMINAL)) return;
      serial({ execInput: { window: windowSize(rows, cols) } }).catch(() => undefined);
    };
    if (control.pendingSize) control.resize(control.pendingSize.rows, control.pendingSize.cols);
  }
  const stdinDone =
    req.stdin === undefined
      ? Promise.resolve()
      : pumpStdin(conn, req.stdin, () => finished, serial).catch((err) => {
          // The command may exit without reading its stdin; the daemon then
          // answers and closes, and our writes fail. Only report a stdin
          // failure when no exit status arrives.
          stdinError = err;
        });

  try {
    for (;;) {
      const m = await conn.next();
      if (!m) {
        await Promise.race([stdinDone, delay(10)]);
        if (conn.remote) throw await conn.lost("before the command exited");
        throw stdinError instanceof Error
          ? stdinError
          : new AgentLaneError("UNAVAILABLE", "agent-laned closed the connection before the command exited");
      }
      switch (m.body) {
        case "execOutput": {
          const data = asBuffer(m.execOutput.data);
          if (data.length === 0) break;
          const h = m.execOutput.stream === "STDERR" ? handlers.onStderr : handlers.onStdout;
          const r = h?.(data);
          if (r) await r;
          break;
        }
        case "execExit": {
          const x = m.execExit;
          if (x.status === "signal") return { signal: x.signal };
          return { code: x.code ?? 0 };
        }
        case "error":
          throw errorFrom(m.error);
        default:
          throw new AgentLaneError("UNAVAILABLE", `unexpected ${m.body} during Exec`);
      }
    }
  } finally {
    finished = true;
  }
}

async function pumpStdin(
  conn: Connection,
  input: string | Uint8Array | AsyncIterable<Uint8Array | string>,
  isFinished: () => boolean,
  send: (req: Record<string, unknown>) => Promise<boolean> = (r) => conn.sendStreamed(r),
): Promise<void> {
  // The daemon closes the connection right after the exit status, even when
  // the command left its stdin unread. Writing into a closed connection fails
  // and can make the socket drop the status it already received, so give the
  // event loop a chance to read before each frame and stop once answered.
  const stop = async () => {
    await new Promise((r) => setImmediate(r));
    return isFinished() || conn.answered(EXEC_TERMINAL);
  };
  let gone = false;
  const sendBuf = async (buf: Buffer) => {
    const chunk = conn.dataChunk();
    for (let off = 0; off < buf.length && !gone; off += chunk) {
      if (await stop()) return (gone = true);
      gone = !(await send({ execInput: { data: buf.subarray(off, off + chunk) } }));
    }
    return gone;
  };
  if (typeof input === "string" || input instanceof Uint8Array) {
    if (await sendBuf(typeof input === "string" ? Buffer.from(input, "utf8") : asBuffer(input))) return;
  } else {
    for await (const piece of input) {
      if (isFinished() || conn.answered(EXEC_TERMINAL)) return;
      if (await sendBuf(typeof piece === "string" ? Buffer.from(piece, "utf8") : asBuffer(piece))) return;
    }
  }
  if (!(await stop())) await send({ execInput: { eof: true } });
}

const EXEC_TERMINAL = ["execExit", "error"] as const;

function delay(ms: number): Promise<undefined> {
  return new Promise((r) => setTimeout(() => r(undefined), ms).unref());
}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new AgentLaneError("DEADLINE_EXCEEDED", `agent-laned did not answer within ${ms} ms`));
    }, ms);
    timer.unref();
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
