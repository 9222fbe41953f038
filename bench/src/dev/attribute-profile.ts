// Where a keyraft node's CPU goes, per verify phase: reads the CPU profile the node wrote under
// `npm run bench -- verify` (KEYRAFT_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") and that
// run's JSON report (one round: --rounds 1), splits the profile's samples into the phases (by
// 100 ms bins, the run's phase order fitted to the functions only a phase runs), files each sample's own (self) time under a part of the request
// by its script, and prints CPU-µs per request per part and phase (docs/bench.md, "Attribution").
//
//   node bench/dist/dev/attribute-profile.js NODE.cpuprofile bench/reports/verify-….json
//
// Each part is its share of the main thread's busy samples in the phase, applied to the CPU the
// bench measured for the node process per request (target cpu / rps, every thread: LevelDB's
// writes and fsyncs on the libuv pool and the GC's helpers are spread over the parts). A
// development tool, not a figure of the bench.
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
interface ReportPhase {
  label: string;
  rps: number;
  targetCpuCores: number | null;
}

const binUs = 100_000;
const phases = ["verify plain", "verify ratelimit", "verify credits", "verify permissions"] as const;
type Phase = (typeof phases)[number];

type Frame = { functionName: string; url: string };

/**
 * The part of a request a sample's own time belongs to, from its script and function; a function
 * without a script (a native, or code compiled at run time) goes with its caller's part, except
 * compiled validators (validate…) and serializers (anonymous…).
 */
export function partOf(frame: Frame, caller?: Frame): string | null {
  const { functionName: fn, url } = frame;
  if (fn === "(idle)") return null;
  if (fn === "(garbage collector)") return "GC";
  if (fn === "(program)") return "native, unattributed (program)";
  if (url === "") {
    if (/^validate/.test(fn)) return "validation";
    if (/^anonymous/.test(fn)) return "serialization";
    return caller === undefined ? "other" : partOf(caller);
  }
  if (url.includes("find-my-way")) return "routing";
  if (url.includes("/ajv") || url.includes("typebox") || url.includes("fastify/lib/validation")) return "validation";
  if (url.includes("fast-json-stringify") || url.includes("fastify/lib/reply") || url.includes("serializ"))
    return "serialization";
  if (url.includes("secure-json-parse") || url.includes("contentTypeParser") || url.includes("toad-cache"))
    return "body parsing";
  if (url.includes("internal/timers")) return "timers";
  if (url.includes("/http/request-id") || url.includes("core/dist/ids") || url.includes("core/dist/hash/base58"))
    return "request ids";
  if (url.includes("pino") || url.includes("sonic-boom") || url.includes("thread-stream")) return "logging";
  if (url.includes("/auth/hash") || url.includes("internal/crypto") || fn === "digest" || fn === "createHash")
    return "hashing";
  if (url.includes("core/dist/ratelimit")) return "limiter";
  if (url.includes("core/dist/verify") || url.includes("core/dist/keystate") || url.includes("core/dist/rbac"))
    return "decision";
  if (
    url.includes("gateway/dist/store") ||
    url.includes("gateway/dist/counters") ||
    url.includes("core/dist/leases") ||
    url.includes("-level/") ||
    url.includes("msgpackr")
  )
    return "durability (counters, journal)";
  if (
    url.includes("gateway/dist/analytics") ||
    url.includes("core/dist/analytics") ||
    url.includes("gateway/dist/metrics") ||
    url.includes("prom-client")
  )
    return "analytics, metrics";
  if (url.includes("gateway/dist")) return "gateway (route, verification)";
  if (url.includes("node_modules/fastify") || url.includes("avvio")) return "fastify";
  if (url.includes("raft/dist")) return "raft";
  if (
    url.includes("_http_") ||
    url.includes("node:net") ||
    url.includes("stream") ||
    url.includes("node:internal/http")
  )
    return "http, sockets";
  if (url.startsWith("node:")) return "node internals";
  return "other";
}

/** The phase a bin's samples point to (0 plain, 1 ratelimit, 2 credits, 3 permissions), or null without verifications. */
function markerOfBin(frames: readonly Frame[]): number | null {
  let verifying = false;
  let marker = 0;
  for (const { functionName, url } of frames) {
    if (url.includes("core/dist/verify") || url.includes("gateway/dist/verify")) verifying = true;
    if (url.includes("core/dist/rbac")) marker = Math.max(marker, 3);
    else if (url.includes("core/dist/ratelimit") || functionName === "cover") marker = Math.max(marker, 1);
    else if (url.includes("counters/credits") && marker < 1) marker = 2;
  }
  return verifying ? marker : null;
}

/**
 * The phases of the bins with verifications: the run's order (plain, ratelimit, credits,
 * permissions, one round) fitted to the bins' markers with the fewest disagreements, so a bin
 * whose marker functions were inlined or not sampled still lands in its phase.
 */
function fitPhases(markers: readonly number[]): number[] {
  const n = markers.length;
  const cost: number[][] = [];
  const from: number[][] = [];
  for (let i = 0; i < n; i++) {
    cost.push([]);
    from.push([]);
    for (let k = 0; k < phases.length; k++) {
      const miss = markers[i] === k ? 0 : 1;
      if (i === 0) {
        cost[i]![k] = miss;
        from[i]![k] = k;
        continue;
      }
      let best = Number.POSITIVE_INFINITY;
      for (let j = 0; j <= k; j++) {
        if (cost[i - 1]![j]! < best) {
          best = cost[i - 1]![j]!;
          from[i]![k] = j;
        }
      }
      cost[i]![k] = best + miss;
    }
  }
  const fitted = new Array<number>(n);
  let k = 0;
  for (let j = 1; j < phases.length; j++) if (n > 0 && cost[n - 1]![j]! < cost[n - 1]![k]!) k = j;
  for (let i = n - 1; i >= 0; i--) {
    fitted[i] = k;
    k = from[i]![k]!;
  }
  return fitted;
}

export function attribute(profile: Profile, report: { phases: ReportPhase[] }): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const callerOf = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) callerOf.set(child, node);
  // Samples per 100 ms bin: the functions seen (to name the phase) and µs per part.
  const bins: Array<{ frames: Frame[]; parts: Map<string, number> }> = [];
  let atUs = 0;
  profile.samples.forEach((id, i) => {
    atUs += profile.timeDeltas[i] ?? 0;
    const deltaUs = profile.timeDeltas[i + 1] ?? 0;
    const bin = Math.floor(atUs / binUs);
    while (bins.length <= bin) bins.push({ frames: [], parts: new Map() });
    const frame = byId.get(id)!.callFrame;
    bins[bin]!.frames.push(frame);
    const part = partOf(frame, callerOf.get(id)?.callFrame);
    if (part !== null) bins[bin]!.parts.set(part, (bins[bin]!.parts.get(part) ?? 0) + deltaUs);
  });
  const perPhase = new Map<Phase, { parts: Map<string, number>; bins: number }>();
  const verifying = bins.filter((bin) => markerOfBin(bin.frames) !== null);
  const fitted = fitPhases(verifying.map((bin) => markerOfBin(bin.frames)!));
  for (const [index, bin] of verifying.entries()) {
    const phase = phases[fitted[index]!]!;
    const into = perPhase.get(phase) ?? { parts: new Map<string, number>(), bins: 0 };
    into.bins++;
    for (const [part, us] of bin.parts) into.parts.set(part, (into.parts.get(part) ?? 0) + us);
    perPhase.set(phase, into);
  }
  const parts = [...new Set([...perPhase.values()].flatMap((phase) => [...phase.parts.keys()]))].sort();
  const columns = phases.filter((phase) => perPhase.has(phase));
  const rows: string[][] = [];
  const measured: string[] = ["total (bench: target cpu / rps)"];
  const perRequest = new Map<Phase, Map<string, number>>();
  for (const phase of columns) {
    const { parts: phaseParts } = perPhase.get(phase)!;
    const reported = report.phases.find((candidate) => candidate.label === phase);
    const totalUs =
      reported !== undefined && reported.targetCpuCores !== null && reported.rps > 0
        ? (reported.targetCpuCores / reported.rps) * 1e6
        : 0;
    // Each part's share of the main thread's busy time, applied to what the bench measured.
    const busyUs = [...phaseParts.values()].reduce((sum, value) => sum + value, 0);
    perRequest.set(
      phase,
      new Map([...phaseParts].map(([part, partUs]) => [part, busyUs > 0 ? (partUs / busyUs) * totalUs : 0])),
    );
    measured.push(totalUs.toFixed(1));
  }
  for (const part of parts)
    rows.push([part, ...columns.map((phase) => (perRequest.get(phase)!.get(part) ?? 0).toFixed(1))]);
  rows.sort((a, b) => Number(b[1]) - Number(a[1]));
  const header = ["CPU-µs per request", ...columns.map((phase) => phase.replace("verify ", ""))];
  const lines = [header, header.map(() => "---"), ...rows, measured];
  return lines.map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

if (process.argv[1]?.endsWith("attribute-profile.js") === true) {
  const [profilePath, reportPath] = process.argv.slice(2);
  if (profilePath === undefined || reportPath === undefined) {
    process.stderr.write("usage: node bench/dist/dev/attribute-profile.js NODE.cpuprofile REPORT.json\n");
    process.exitCode = 2;
  } else {
    const profile = JSON.parse(readFileSync(profilePath, "utf8")) as Profile;
    const report = JSON.parse(readFileSync(reportPath, "utf8")) as { phases: ReportPhase[] };
    process.stdout.write(`${attribute(profile, report)}\n`);
  }
}
