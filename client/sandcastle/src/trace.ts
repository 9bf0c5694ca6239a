/**
 * AGENT_LANE_PROVIDER_TRACE=1: one stderr line per provider call (what
 * Sandcastle asked, how long it took, for an exec when its first output
 * came), and a summary by kind when the sandbox closes. It is how
 * docs/performance.md's breakdown of a Sandcastle run was taken; the
 * command text is cut to 60 characters and the environment never printed.
 */
import { performance } from "node:perf_hooks";

export const traceOn = (): boolean => process.env.AGENT_LANE_PROVIDER_TRACE === "1";

export interface CallTimer {
  /** The first output byte of an exec arrived. */
  firstOutput(): void;
  /** The call ended (ok or not). */
  end(ok: boolean): void;
}

export class ProviderTrace {
  private n = 0;
  private readonly kinds = new Map<string, { calls: number; ms: number }>();
  private readonly t0 = performance.now();
  constructor(private readonly lane: string) {}

  start(kind: string, detail: string): CallTimer {
    const t = performance.now();
    let first: number | undefined;
    const n = ++this.n;
    return {
      firstOutput: () => {
        if (first === undefined) first = performance.now() - t;
      },
      end: (ok) => {
        const ms = performance.now() - t;
        const k = this.kinds.get(kind) ?? { calls: 0, ms: 0 };
        k.calls++;
        k.ms += ms;
        this.kinds.set(kind, k);
        const f = first !== undefined ? ` (first output ${first.toFixed(1)} ms)` : "";
        process.stderr.write(
          `agent-lane trace: ${this.lane} #${n} ${kind} ${ms.toFixed(1)} ms${f}${ok ? "" : " FAILED"} ${detail}\n`,
        );
      },
    };
  }

  summary(): void {
    const parts = [...this.kinds].map(([k, v]) => `${k} ${v.calls}x ${v.ms.toFixed(0)} ms`);
    process.stderr.write(
      `agent-lane trace: ${this.lane} ${this.n} calls in ${(performance.now() - this.t0).toFixed(0)} ms since ready: ${parts.join(", ")}\n`,
    );
  }
}

/** A command as the trace shows it: one line, at most 60 characters. */
export function traceText(s: string): string {
  const one = JSON.stringify(s);
  return one.length > 62 ? `${one.slice(0, 59)}..."` : one;
}

/** Times `p` as one call of `kind` when tracing is on. */
export async function timed<T>(trace: ProviderTrace | undefined, kind: string, detail: string, p: (t?: CallTimer) => Promise<T>): Promise<T> {
  if (!trace) return p();
  const t = trace.start(kind, detail);
  try {
    const v = await p(t);
    t.end(true);
    return v;
  } catch (err) {
    t.end(false);
    throw err;
  }
}
