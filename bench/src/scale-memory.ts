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
const batchKeys = 1_000;

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

export function fillState(keyCount: number): KeyState {
  const state = createKeyState();
  const nowMs = Date.UTC(2026, 0, 1);
  const apiId = newId("api", nowMs, randomBytes(8));
  const created = applyCommand(state, { type: "createApi", apiId, name: "scale", nowMs } as KeyCommand);
  if (!created.ok) throw new Error(`createApi: ${JSON.stringify(created)}`);
  for (let from = 0; from < keyCount; from += batchKeys) {
    const outcome = applyCommand(state, importCommand(apiId, from, Math.min(keyCount, from + batchKeys), nowMs));
    if (!outcome.ok) throw new Error(`importKeys: ${JSON.stringify(outcome)}`);
  }
  return state;
}

/** Heap bytes per key of each part, in the order they are let go. */
export function measureParts(keyCount: number): { part: string; bytesPerKey: number }[] {
  const parts: { part: string; bytesPerKey: number }[] = [];
  const empty = heapUsed();
  let state: KeyState | null = fillState(keyCount);
  let last = heapUsed();
  const dropped = (part: string): void => {
    const now = heapUsed();
    parts.push({ part, bytesPerKey: (last - now) / keyCount });
    last = now;
  };
  parts.push({ part: "total", bytesPerKey: (last - empty) / keyCount });
  const keys = [...state.keys.values()];
  for (const key of keys) keyDerived(state, key);
  const withDerived = heapUsed();
  parts.push({
    part: "derived cache (after every key was verified once)",
    bytesPerKey: (withDerived - last) / keyCount,
  });
  last = withDerived;
  state.derived.clear();
  last = heapUsed();
  state.creditLedgers.clear();
  dropped("credit ledgers");
  state.keyIdsByApi.clear();
  dropped("api → key ids index (Set)");
  state.keyIdByHash.clear();
  dropped("hash → key id index (Map entries)");
  state.keys.clear();
  dropped("id → key record map (Map entries)");
  const shared: never[] = [];
  for (const key of keys) key.meta = null;
  dropped("meta objects");
  for (const key of keys) key.ratelimits = shared;
  dropped("rate-limit configs (array + object)");
  for (const key of keys) key.hash = "";
  dropped("hash strings");
  for (const key of keys) {
    key.name = null;
    key.start = "";
  }
  dropped("name and start strings");
  for (const key of keys) key.id = "";
  dropped("key id strings");
  for (const key of keys) key.apiId = "";
  dropped("api id strings (one copy per key)");
  keys.length = 0;
  state = null;
  dropped("key records (objects, roleIds/permissionIds arrays)");
  return parts;
}

// Run directly: the table, then the same as one JSON line.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const keyCount = Number(process.argv[2] ?? keysDefault);
  if (!Number.isSafeInteger(keyCount) || keyCount < 1000) throw new Error("keys: a whole number of at least 1000");
  const parts = measureParts(keyCount);
  process.stdout.write(`heap bytes per key, ${keyCount} keys (node ${process.version}):\n`);
  for (const { part, bytesPerKey } of parts) process.stdout.write(`  ${part}: ${bytesPerKey.toFixed(1)}\n`);
  process.stdout.write(
    `${JSON.stringify(Object.fromEntries(parts.map((p) => [p.part, Math.round(p.bytesPerKey)])))}\n`,
  );
}
