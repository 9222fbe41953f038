// The key state's heap bytes per key, by part: `node --expose-gc bench/dist/scale-memory.js
// [keys]` (default 200,000). Keys are imported in process as the scale scenario imports them
// (1,000 per importKeys command, each with credits, a rate limit and a small meta), then the
// parts are let go one after the other, each drop measured as heapUsed after a full GC: what a
// part costs is what the heap loses without it. Strings are counted where they are let go.
// It measures the core's state only, not the gateway's counters (the scale scenario's RSS does).
import { createHash, randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { applyCommand, createKeyState, keyDerived, newId, type KeyCommand, type KeyState } from "@keyraft/core";

const keysDefault = 200_000;
export const batchKeys = 1_000;

function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with node --expose-gc");
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** One importKeys command as the gateway builds it, through JSON so every string is fresh. */
function importCommand(apiId: string, from: number, to: number, nowMs: number): KeyCommand {
  const keys = [];
  for (let i = from; i < to; i++) {
    const plaintext = `scale_${i}_${randomBytes(8).toString("hex")}`;
    keys.push({
      keyId: newId("key", nowMs, randomBytes(8)),
      apiId,
      hash: createHash("sha256").update(plaintext).digest("base64"),
      start: plaintext.slice(0, 10),
      name: `scale-${i}`,
      ownerId: null,
      identity: null,
      meta: { plan: i % 2 === 0 ? "pro" : "free", seq: i },
      expiresAtMs: null,
      remaining: 1_000_000,
      refill: null,
      ratelimit: { limit: 1_000, durationMs: 60_000 },
      enabled: true,
      environment: null,
      permissions: [],
      roles: [],
    });
  }
  const command = { type: "importKeys", keys, allowCreatePermissions: false, allowCreateRoles: false, nowMs };
  return JSON.parse(JSON.stringify(command)) as KeyCommand;
}

export function fillState(keyCount: number, onApplied?: (keysBefore: number, applyMs: number) => void): KeyState {
  const state = createKeyState();
  const nowMs = Date.UTC(2026, 0, 1);
  const apiId = newId("api", nowMs, randomBytes(8));
  const created = applyCommand(state, { type: "createApi", apiId, name: "scale", nowMs } as KeyCommand);
  if (!created.ok) throw new Error(`createApi: ${JSON.stringify(created)}`);
  for (let from = 0; from < keyCount; from += batchKeys) {
    const command = importCommand(apiId, from, Math.min(keyCount, from + batchKeys), nowMs);
    const startMs = performance.now();
    const outcome = applyCommand(state, command);
    onApplied?.(from, performance.now() - startMs);
    if (!outcome.ok) throw new Error(`importKeys: ${JSON.stringify(outcome)}`);
  }
  return state;
}

/** Heap and array-buffer bytes, after a full GC. */
function memoryUsed(): { heap: number; buffers: number } {
  const heap = heapUsed();
  return { heap, buffers: process.memoryUsage().arrayBuffers };
}

/**
 * Bytes per key of each part. The keys are held as bytes in the key table's arena (array
 * buffers, outside the heap the collector traces), so a part is measured as heap and buffers
 * together, and the arena's own figure is given as well.
 */
export function measureParts(keyCount: number): { part: string; bytesPerKey: number }[] {
  const parts: { part: string; bytesPerKey: number }[] = [];
  const empty = memoryUsed();
  let state: KeyState | null = fillState(keyCount);
  const filled = memoryUsed();
  const perKey = (bytes: number) => bytes / keyCount;
  parts.push({
    part: "total (heap and buffers)",
    bytesPerKey: perKey(filled.heap + filled.buffers - empty.heap - empty.buffers),
  });
  parts.push({ part: "of which heap", bytesPerKey: perKey(filled.heap - empty.heap) });
  parts.push({ part: "of which array buffers", bytesPerKey: perKey(filled.buffers - empty.buffers) });
  parts.push({ part: "key table arena (live and dead records)", bytesPerKey: perKey(state.keys.arenaByteLength) });
  let slice = 0;
  for (const id of state.keys.keys()) {
    const key = state.keys.get(id)!;
    keyDerived(state, key);
    if (++slice === 10_000) break;
  }
  const withDerived = memoryUsed();
  parts.push({
    part: "verification view and decoded record of a verified key (10,000 verified)",
    bytesPerKey: (withDerived.heap + withDerived.buffers - filled.heap - filled.buffers) / slice,
  });
  state = null;
  return parts;
}

// Run directly: the table, then the same as one JSON line.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keyCount = Number(process.argv[2] ?? keysDefault);
  if (!Number.isSafeInteger(keyCount) || keyCount < 1000) throw new Error("keys: a whole number of at least 1000");
  const parts = measureParts(keyCount);
  process.stdout.write(`bytes per key, ${keyCount} keys (node ${process.version}):\n`);
  for (const { part, bytesPerKey } of parts) process.stdout.write(`  ${part}: ${bytesPerKey.toFixed(1)}\n`);
  process.stdout.write(
    `${JSON.stringify(Object.fromEntries(parts.map((p) => [p.part, Math.round(p.bytesPerKey)])))}\n`,
  );
}
