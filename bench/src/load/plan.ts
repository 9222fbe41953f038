// What a load phase sends: plain data, so it crosses into worker threads by structured clone.
import type { Distribution } from "../args.js";

/** One kind of request of a phase. A phase draws a kind per request, in proportion to `weight`. */
export interface RequestSpec {
  /** Name in reports ("verify", "updateKey", ...). */
  name: string;
  weight: number;
  method: "POST" | "GET";
  path: string;
  headers: Readonly<Record<string, string>>;
  /**
   * Request body. `{{pick}}` is replaced by a pool item as a JSON string, `{{seq}}` by a counter
   * unique per worker (so writes really change something), `{{seq8}}` by that counter modulo 8.
   */
  bodyTemplate: string;
  /** Items for `{{pick}}` (keys, key ids, identifiers). */
  pool: readonly string[];
  distribution: Distribution;
  zipfExponent: number;
  /** A response containing this text counts as "ok" in the report (e.g. `"valid":true`); null: not counted. */
  okMarker: string | null;
}

export interface LoadPlan {
  /** Phase label in the progress line and the report. */
  label: string;
  targets: readonly string[];
  /** Requests in flight at any time, over all workers and targets. */
  connections: number;
  warmupMs: number;
  durationMs: number;
  requests: readonly RequestSpec[];
  seed: number;
}

export type BodyBuilder = (pick: string, seq: number) => string;

type Hole = "pick" | "seq" | "seq8";

/**
 * Splits the template once, so that building a body is a few string concatenations.
 * Holes: `{{pick}}` (the pool item as a JSON string), `{{seq}}` (the counter), `{{seq8}}` (the
 * counter modulo 8: writes that cycle through a small, bounded set of values).
 */
export function compileTemplate(template: string): BodyBuilder {
  const literals: string[] = [];
  const holes: Hole[] = [];
  const pattern = /\{\{(pick|seq8|seq)\}\}/g;
  let last = 0;
  for (let match = pattern.exec(template); match !== null; match = pattern.exec(template)) {
    literals.push(template.slice(last, match.index));
    holes.push(match[1] as Hole);
    last = match.index + match[0].length;
  }
  const tail = template.slice(last);
  if (holes.length === 0) return () => template;
  return (pick, seq) => {
    let body = "";
    for (let i = 0; i < holes.length; i++) {
      body += literals[i] as string;
      const hole = holes[i] as Hole;
      body += hole === "pick" ? JSON.stringify(pick) : hole === "seq" ? String(seq) : String(seq % 8);
    }
    return body + tail;
  };
}

/** Splits `total` connections over `parts` as evenly as possible (earlier parts get the remainder). */
export function splitEvenly(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}
