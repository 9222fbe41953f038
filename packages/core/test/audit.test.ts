// The audit log in the key state: entries derived from applied admin commands carrying an audit
// context, bounded by retention and auditEntriesMax, read newest first, kept through snapshots.
import { describe, expect, it } from "vitest";
import { createAuditLog, queryAudit, recordAudit } from "../src/audit/log.js";
import { auditEntriesMax, auditPageEntriesMax } from "../src/audit/limits.js";
import type { AuditContext } from "../src/audit/types.js";
import type { KeyCommand } from "../src/keystate/commands.js";
import { applyCommand } from "../src/keystate/machine.js";
import { restoreKeyState, snapshotKeyState } from "../src/keystate/snapshot.js";
import { createKeyState } from "../src/keystate/state.js";
import type { KeyState } from "../src/keystate/types.js";

const dayMs = 86_400_000;
const t0 = Date.UTC(2026, 0, 1);

function context(overrides: Partial<AuditContext> = {}): AuditContext {
  return { actorKeyId: "key_root", requestId: "req_1", atMs: t0, retentionMs: 90 * dayMs, ...overrides };
}

function apply(state: KeyState, command: KeyCommand) {
  const outcome = applyCommand(state, command);
  if (!outcome.ok) throw new Error(outcome.message);
  return outcome;
}

function createKeyCommand(keyId: string, apiId: string, audit?: AuditContext): KeyCommand {
  return {
    type: "createKey",
    keyId,
    apiId,
    hash: `hash_${keyId}`,
    start: "sk_12",
    name: "my key",
    ownerId: null,
    identity: null,
    meta: { secretish: "value" },
    expiresAtMs: null,
    remaining: 10,
    refill: null,
    ratelimit: null,
    enabled: true,
    environment: null,
    permissions: [{ name: "read", newId: "perm_read", create: true }],
    roles: [],
    allowCreatePermissions: true,
    allowCreateRoles: false,
    nowMs: t0,
    ...(audit === undefined ? {} : { audit }),
  };
}

describe("audit entries from applied commands", () => {
  it("records actor, action, targets, request id and changed fields, never a hash or metadata", () => {
    const state = createKeyState();
    apply(state, { type: "createApi", apiId: "api_1", name: "payments", nowMs: t0, audit: context() });
    apply(state, createKeyCommand("key_1", "api_1", context({ requestId: "req_2", atMs: t0 + 5 })));
    apply(state, {
      type: "updateKey",
      keyId: "key_1",
      nowMs: t0 + 9,
      enabled: false,
      meta: null,
      audit: context({ requestId: "req_3", atMs: t0 + 9 }),
    });
    expect(state.audit.entries).toEqual([
      {
        seq: 1,
        atMs: t0,
        actorKeyId: "key_root",
        action: "api.create",
        targetIds: ["api_1"],
        requestId: "req_1",
        changes: { name: "payments" },
      },
      {
        seq: 2,
        atMs: t0 + 5,
        actorKeyId: "key_root",
        action: "key.create",
        targetIds: ["key_1", "api_1"],
        requestId: "req_2",
        changes: { name: "my key", meta: "set", remaining: 10, enabled: true, permissions: ["read"] },
      },
      {
        seq: 3,
        atMs: t0 + 9,
        actorKeyId: "key_root",
        action: "key.update",
        targetIds: ["key_1"],
        requestId: "req_3",
        changes: { enabled: false, meta: null },
      },
    ]);
    expect(JSON.stringify(state.audit.entries)).not.toMatch(/hash_key_1|secretish|sk_12/);
  });

  it("leaves no entry for a refused command, a command without context, or a credit spend", () => {
    const state = createKeyState();
    apply(state, createKeyCommand("key_1", "api_root"));
    expect(applyCommand(state, { type: "deleteApi", apiId: "api_missing", audit: context() }).ok).toBe(false);
    apply(state, { type: "spendCredits", keyId: "key_1", cost: 1, nowMs: t0, audit: context() });
    expect(state.audit.entries).toEqual([]);
    expect(state.audit.nextSeq).toBe(1);
  });

  it("drops entries past the proposer's retention when a new one is added", () => {
    const state = createKeyState();
    const retentionMs = 10 * dayMs;
    apply(state, { type: "createApi", apiId: "api_a", name: "a", nowMs: t0, audit: context({ retentionMs }) });
    apply(state, {
      type: "createApi",
      apiId: "api_b",
      name: "b",
      nowMs: t0,
      audit: context({ atMs: t0 + 10 * dayMs, retentionMs }),
    });
    expect(state.audit.entries.map((entry) => entry.seq)).toEqual([1, 2]); // exactly at the bound: kept
    apply(state, {
      type: "createApi",
      apiId: "api_c",
      name: "c",
      nowMs: t0,
      audit: context({ atMs: t0 + 10 * dayMs + 1, retentionMs }),
    });
    expect(state.audit.entries.map((entry) => entry.seq)).toEqual([2, 3]);
  });

  it("records a membership change (auditEvent) and refuses an unknown action", () => {
    const state = createKeyState();
    apply(state, {
      type: "auditEvent",
      action: "cluster.addNode",
      targetIds: ["n4"],
      changes: { address: "ws://10.0.0.4:7001" },
      audit: context(),
    });
    expect(state.audit.entries.map((entry) => [entry.action, entry.targetIds, entry.changes])).toEqual([
      ["cluster.addNode", ["n4"], { address: "ws://10.0.0.4:7001" }],
    ]);
    const refused = applyCommand(state, {
      type: "auditEvent",
      action: "key.delete",
      targetIds: [],
      changes: {},
      audit: context(),
    });
    expect(refused.ok).toBe(false);
    expect(state.audit.entries).toHaveLength(1);
  });

  it(`keeps at most auditEntriesMax (${auditEntriesMax}) entries, dropping the oldest`, () => {
    const log = createAuditLog();
    const command: KeyCommand = { type: "deleteKey", keyId: "key_x", audit: context() };
    for (let i = 0; i < auditEntriesMax; i++) recordAudit(log, command, { ok: true });
    expect(log.entries.length).toBe(auditEntriesMax);
    expect(log.entries[0]?.seq).toBe(1);
    recordAudit(log, command, { ok: true });
    expect(log.entries.length).toBe(auditEntriesMax);
    expect(log.entries[0]?.seq).toBe(2);
    expect(log.entries.at(-1)?.seq).toBe(auditEntriesMax + 1);
  });
});

describe("queryAudit", () => {
  const state = createKeyState();
  for (let i = 1; i <= 7; i++) {
    apply(state, {
      type: "createApi",
      apiId: `api_${i}`,
      name: `api ${i}`,
      nowMs: t0,
      audit: context({ actorKeyId: i % 2 === 0 ? "key_even" : "key_odd", atMs: t0 + i * 1000 }),
    });
  }
  apply(state, { type: "deleteApi", apiId: "api_3", audit: context({ atMs: t0 + 8000 }) });
  const all = { limit: auditPageEntriesMax, oldestKeptMs: 0 };

  it("lists newest first and pages with a cursor until null", () => {
    const first = queryAudit(state.audit, { ...all, limit: 3 });
    expect(first.entries.map((entry) => entry.seq)).toEqual([8, 7, 6]);
    expect(first.cursor).toBe(6);
    const second = queryAudit(state.audit, { ...all, limit: 3, beforeSeq: first.cursor! });
    expect(second.entries.map((entry) => entry.seq)).toEqual([5, 4, 3]);
    const third = queryAudit(state.audit, { ...all, limit: 3, beforeSeq: second.cursor! });
    expect(third.entries.map((entry) => entry.seq)).toEqual([2, 1]);
    expect(third.cursor).toBeNull();
    // A page that ends exactly at the last match still says so on the next call.
    const exact = queryAudit(state.audit, { ...all, limit: 2, beforeSeq: 3 });
    expect(exact).toEqual({ entries: [state.audit.entries[1], state.audit.entries[0]], cursor: null });
  });

  it("filters by actor, target id, action, time range and retention", () => {
    const seqs = (filter: Partial<Parameters<typeof queryAudit>[1]>) =>
      queryAudit(state.audit, { ...all, ...filter }).entries.map((entry) => entry.seq);
    expect(seqs({ actorKeyId: "key_even" })).toEqual([6, 4, 2]);
    expect(seqs({ targetId: "api_3" })).toEqual([8, 3]);
    expect(seqs({ action: "api.delete" })).toEqual([8]);
    expect(seqs({ sinceMs: t0 + 2000, untilMs: t0 + 4000 })).toEqual([4, 3, 2]);
    expect(seqs({ oldestKeptMs: t0 + 7000 })).toEqual([8, 7]);
    expect(seqs({ actorKeyId: "key_nobody" })).toEqual([]);
  });

  it("asserts the page bound", () => {
    expect(() => queryAudit(state.audit, { ...all, limit: auditPageEntriesMax + 1 })).toThrow();
    expect(() => queryAudit(state.audit, { ...all, limit: 0 })).toThrow();
  });
});

describe("the audit log in snapshots", () => {
  it("survives a snapshot and restore, and continues its seq", () => {
    const state = createKeyState();
    apply(state, { type: "createApi", apiId: "api_1", name: "a", nowMs: t0, audit: context() });
    apply(state, createKeyCommand("key_1", "api_1", context({ requestId: "req_2" })));
    const restored = restoreKeyState(snapshotKeyState(state));
    expect(restored.audit).toEqual(state.audit);
    apply(restored, { type: "deleteKey", keyId: "key_1", audit: context({ requestId: "req_3" }) });
    expect(restored.audit.entries.map((entry) => entry.seq)).toEqual([1, 2, 3]);
    expect(state.audit.entries).toHaveLength(2); // the copy shares nothing
  });

  it("loads a version 1 snapshot (from before the audit log) with an empty log", () => {
    const state = createKeyState();
    apply(state, { type: "createApi", apiId: "api_1", name: "a", nowMs: t0, audit: context() });
    const { auditEntries: _entries, auditNextSeq: _next, ...rest } = snapshotKeyState(state);
    const restored = restoreKeyState({ ...rest, version: 1 });
    expect(restored.apis.has("api_1")).toBe(true);
    expect(restored.audit).toEqual({ entries: [], nextSeq: 1 });
    expect(() => restoreKeyState({ ...rest, version: 4 })).toThrow();
  });
});
