/**
 * Where agent-laned is, and how a connection reaches it: its Unix socket,
 * or another machine through the user's own OpenSSH, which runs
 * `agent-lanectl system dial-stdio` there (Docker's ssh:// hosts, the same
 * design; libagentlane's client/lib/transport.c does the same in C). The
 * protocol over ssh is unchanged. Contexts are read as agent-lanectl
 * writes them (~/.agent-lane/contexts/NAME, agent-lanectl(1) CONTEXTS),
 * with the same strict rules.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { lstatSync, readFileSync, type Stats } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Socket } from "node:net";

/** Where a connection goes. */
export type Host =
  | { kind: "unix"; path: string; url: string }
  | { kind: "ssh"; user: string; host: string; port: number; url: string };

/** A URL that is not one: the caller says INVALID_ARGUMENT with this. */
export class HostError extends Error {}

const NAME = /^[A-Za-z0-9._-]+$/;
const V6 = /^[0-9A-Za-z:.%]+$/;
/* eslint-disable-next-line no-control-regex */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * ssh://[USER@]HOST[:PORT] or unix:///PATH, strictly: nothing ssh could
 * take as an option, nothing the remote shell would split.
 */
export function parseHost(url: string): Host {
  if (typeof url !== "string" || url.length === 0 || url.length >= 1100) throw new HostError(`not a host URL: ${JSON.stringify(url)}`);
  if (CONTROL.test(url)) throw new HostError("a host URL holds control characters");
  if (url.startsWith("unix://")) {
    const p = url.slice(7);
    if (!p.startsWith("/")) throw new HostError(`${url}: a unix host is an absolute socket path: unix:///PATH`);
    return { kind: "unix", path: p, url };
  }
  if (!url.startsWith("ssh://")) throw new HostError(`${url}: not a host URL; use ssh://[USER@]HOST[:PORT] or unix:///PATH`);
  const rest = url.slice(6);
  if (/[/?#]/.test(rest)) throw new HostError(`${url}: an ssh host takes no path, query or fragment`);
  const at = rest.indexOf("@");
  const user = at >= 0 ? rest.slice(0, at) : "";
  let hostPart = at >= 0 ? rest.slice(at + 1) : rest;
  if (at >= 0 && (user === "" || user.length > 63 || user.startsWith("-") || !NAME.test(user))) {
    throw new HostError(`${url}: a user name is [A-Za-z0-9._-], not beginning with "-"`);
  }
  let host: string;
  let portText: string | undefined;
  if (hostPart.startsWith("[")) {
    const end = hostPart.indexOf("]");
    if (end < 0) throw new HostError(`${url}: no "]" after an IPv6 address`);
    host = hostPart.slice(1, end);
    const after = hostPart.slice(end + 1);
    if (after !== "" && !after.startsWith(":")) throw new HostError(`${url}: something after the address`);
    portText = after ? after.slice(1) : undefined;
    if (!V6.test(host) || !host.includes(":")) throw new HostError(`${url}: not an IPv6 address in brackets`);
  } else {
    const colon = hostPart.indexOf(":");
    host = colon >= 0 ? hostPart.slice(0, colon) : hostPart;
    portText = colon >= 0 ? hostPart.slice(colon + 1) : undefined;
    if (!NAME.test(host)) throw new HostError(`${url}: a host name is [A-Za-z0-9._-] (or [IPv6])`);
  }
  if (host === "" || host.length > 255 || host.startsWith("-") || host.startsWith(".")) {
    throw new HostError(`${url}: the host is empty, too long or begins with "-" or "."`);
  }
  let port = 0;
  if (portText !== undefined) {
    if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      throw new HostError(`${url}: the port is not a number from 1 to 65535`);
    }
    port = Number(portText);
  }
  hostPart = host;
  return { kind: "ssh", user, host: hostPart, port, url };
}

/** The agent-lanectl to run on an ssh host: [~/]{A-Za-z0-9._+/-}, not "-...". */
export function remoteCommandValid(cmd: string): boolean {
  if (typeof cmd !== "string" || cmd.length === 0 || cmd.length > 255 || cmd.startsWith("-")) return false;
  const rest = cmd.startsWith("~/") ? cmd.slice(2) : cmd;
  return /^[A-Za-z0-9._+/-]*$/.test(rest);
}

// ---------------------------------------------------------------------------
// contexts

export interface Context {
  name: string;
  host: string;
  description: string;
  remoteCommand: string;
}

const CONTEXT_FILE_MAX = 4096;
const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

function contextDir(): string {
  return path.join(process.env.HOME && path.isAbsolute(process.env.HOME) ? process.env.HOME : os.homedir(), ".agent-lane");
}

/** A file or directory of ours that no one else could have written. */
function checkOurs(p: string, st: Stats, dir: boolean): void {
  if (dir ? !st.isDirectory() : !st.isFile()) throw new HostError(`${p} is not a ${dir ? "directory" : "regular file"}`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new HostError(`${p} belongs to uid ${st.uid}, not to us`);
  if ((st.mode & 0o022) !== 0) throw new HostError(`${p} is writable by others (mode ${(st.mode & 0o7777).toString(8)})`);
}

function readOurs(p: string, max: number): string | undefined {
  let st: Stats;
  try {
    st = lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  checkOurs(p, st, false);
  if (st.size > max) throw new HostError(`${p} is larger than ${max} bytes`);
  return readFileSync(p, "utf8");
}

/** A context file's text, as ctx_parse in client/ctl/ctxstore.c reads it. */
export function parseContext(name: string, text: string): Context {
  const c: Context = { name, host: "", description: "", remoteCommand: "" };
  const seen = new Set<string>();
  if (Buffer.byteLength(text) > CONTEXT_FILE_MAX) throw new HostError(`context ${name}: larger than ${CONTEXT_FILE_MAX} bytes`);
  if (text.length > 0 && !text.endsWith("\n")) throw new HostError(`context ${name}: the last line has no newline`);
  const lines = text.split("\n").slice(0, -1);
  lines.forEach((line, i) => {
    const where = `context ${name}: line ${i + 1}`;
    if (line.startsWith("#")) {
      if (/[\u0000-\u001f\u007f]/.test(line)) throw new HostError(`${where}: a control character in a comment`);
      return;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new HostError(`${where}: neither KEY=VALUE nor a # comment`);
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    const field = ({ host: "host", description: "description", "remote-command": "remoteCommand" } as const)[key as "host"];
    if (field === undefined) throw new HostError(`${where}: an unknown key`);
    if (seen.has(key)) throw new HostError(`${where}: ${key} is given twice`);
    seen.add(key);
    if (CONTROL.test(value) || value.includes("\ufffd")) throw new HostError(`${where}: ${key} is not printable UTF-8`);
    c[field] = value;
  });
  if (c.host === "") throw new HostError(`context ${name}: no host=URL line`);
  return c;
}

/** The context of that name (undefined: none), checked as agent-lanectl does. */
export function loadContext(name: string): Context | undefined {
  if (!CONTEXT_NAME.test(name) || name === "default") throw new HostError(`"${name}" is not a context name`);
  const top = contextDir();
  for (const d of [top, path.join(top, "contexts")]) {
    let st: Stats;
    try {
      st = lstatSync(d);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    checkOurs(d, st, true);
  }
  const text = readOurs(path.join(top, "contexts", name), CONTEXT_FILE_MAX);
  return text === undefined ? undefined : parseContext(name, text);
}

/** The current context's name ("default": the local socket). */
export function currentContext(): string {
  const top = contextDir();
  try {
    checkOurs(top, lstatSync(top), true);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "default";
    throw err;
  }
  const text = readOurs(path.join(top, "current-context"), 64);
  if (text === undefined) return "default";
  const name = text.endsWith("\n") ? text.slice(0, -1) : "";
  if (name !== "default" && !CONTEXT_NAME.test(name)) throw new HostError(`${path.join(top, "current-context")} does not hold one context name and a newline`);
  return name;
}

// ---------------------------------------------------------------------------
// ssh

/** ssh's last words, kept bounded: why a connection failed. */
const STDERR_TAIL = 1024;
/** How long a finished ssh may take to exit before it is told to. */
const SSH_EXIT_WAIT_MS = 3000;

export interface SshStream {
  /** ssh's standard output: the daemon's frames. */
  readonly input: Socket;
  /** ssh's standard input: our frames. */
  readonly output: Socket;
  /** Why the connection ended, in ssh's words once it has exited (bounded wait). */
  explain(): Promise<string>;
  /** Closes our side; ssh ends with it (or is told to). */
  close(): void;
}

/**
 * What ssh may inherit of our environment: an allow list, as libagentlane's
 * (client/lib/transport.c, ssh_environ), never the whole environment minus
 * the secrets. Secret values live in the environment (a provider's secrets
 * are commonly process.env values, and the process may hold others we never
 * hear of), and whatever ssh holds a `SendEnv` rule in ssh_config forwards
 * to the remote host. A value travels only in the protocol, so ssh gets
 * only what it and the programs it runs need; exact names (the locale's by
 * category), so that no pattern lets a secret called LC_TOKEN through.
 * Anything else an ssh configuration needs (a ProxyCommand's AWS_PROFILE,
 * ${VAR} in ssh_config) the user names in AGENT_LANE_SSH_ENV, separated by
 * spaces or commas; never a secret's variable.
 */
export const SSH_ENV_ALLOWED: readonly string[] = [
  "HOME", "USER", "LOGNAME", "PATH", "SHELL", "TMPDIR", "XDG_RUNTIME_DIR", "TERM",
  "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC",
  "LC_TIME", "LC_MONETARY", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT",
  "LC_NAME", "LC_PAPER", "LC_TELEPHONE", "SSH_AUTH_SOCK", "SSH_AGENT_PID",
  "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "SSH_SK_PROVIDER", "DISPLAY", "XAUTHORITY",
  "KRB5CCNAME", "KRB5_CONFIG",
];

/** The environment ssh is given: the allowed variables of env, and those AGENT_LANE_SSH_ENV names. */
export function sshEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const extra = (env.AGENT_LANE_SSH_ENV ?? "").split(/[\s,]+/).filter((n) => n !== "");
  const keep = new Set([...SSH_ENV_ALLOWED, ...extra]);
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (keep.has(k) && v !== undefined) out[k] = v;
  return out;
}

/**
 * Runs `ssh -o BatchMode=yes -T [-p PORT] [-l USER] -- HOST REMOTE system
 * dial-stdio` with the user's own ssh, configuration, agent and known hosts:
 * an unknown host key fails, and nothing is accepted for the user. ssh gets
 * a process group of its own, so that a ^C at the terminal is ours to
 * handle, and no secret's value in its environment (sshEnv).
 */
export function openSsh(host: Extract<Host, { kind: "ssh" }>, remoteCommand: string): SshStream {
  const args = ["-o", "BatchMode=yes", "-T"];
  if (host.port) args.push("-p", String(host.port));
  if (host.user) args.push("-l", host.user);
  args.push("--", host.host, remoteCommand, "system", "dial-stdio");
  const child: ChildProcess = spawn("ssh", args, { stdio: ["pipe", "pipe", "pipe"], detached: true, env: sshEnv() });
  let tail = "";
  let spawnError: Error | undefined;
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.on("error", (err) => {
      spawnError = err;
      resolve();
    });
    child.on("exit", (code, signal) => {
      exit = signal ? `signal ${signal}` : `exit ${code}`;
      resolve();
    });
  });
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (s: string) => {
    tail = (tail + s).slice(-STDERR_TAIL);
  });
  let killer: NodeJS.Timeout | undefined;
  return {
    input: child.stdout as Socket,
    output: child.stdin as Socket,
    async explain() {
      const wait = new Promise<void>((r) => setTimeout(r, SSH_EXIT_WAIT_MS).unref());
      await Promise.race([exited, wait]);
      if (spawnError) {
        const hint = (spawnError as NodeJS.ErrnoException).code === "ENOENT" ? " (is OpenSSH's ssh on PATH?)" : "";
        return `${host.url}: cannot run ssh: ${spawnError.message}${hint}`;
      }
      const words = tail
        .split(/\r?\n/)
        .map((l) => l.replace(CONTROL, "?").trim())
        .filter((l) => l !== "")
        .join("; ");
      return words !== "" ? `${host.url}: ${words}` : `${host.url}: the connection ended (ssh: ${exit ?? "ended"})`;
    },
    close() {
      child.stdin?.destroy();
      child.stdout?.destroy();
      if (!killer && child.exitCode === null && child.signalCode === null) {
        killer = setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        }, SSH_EXIT_WAIT_MS);
        killer.unref();
        child.once("exit", () => clearTimeout(killer));
      }
    },
  };
}
