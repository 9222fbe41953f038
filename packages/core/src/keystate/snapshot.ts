// The whole key state as plain data (arrays of records in the order of the state's maps, which
// every replica shares: the order of the log) and back. Indexes and caches are rebuilt on
// restore, never stored.

import { assert } from "../assert.js";
import type { AuditEntry } from "../audit/types.js";
import { noFloors, noLeases } from "../leases/ledger.js";
import type { CreditLedgerRecord } from "../leases/types.js";
import { isUntouchedLedger } from "./credit-ledgers.js";
import { encodedPartRecords, LimitsOfSnapshot, type CapturedKeys, type EncodedKeys } from "./key-table.js";
import { indexPermissionSlug, indexRoleName } from "./names.js";
import { indexWildcardOverride } from "./overrides-index.js";
import { clearKeyState, createKeyState, indexKey } from "./state.js";
import {
  ROOT_API_ID,
  type ApiRecord,
  type IdentityRecord,
  type JsonObject,
  type KeyRecord,
  type KeyState,
  type NamespaceRecord,
  type OverrideRecord,
  type PermissionRecord,
  type RoleRecord,
} from "./types.js";

/**
 * Version written. 2 added the audit log; 3 what the v2 API needs: keys pending a migration
 * (`pendingMigrationId`), named key limits and auto-applied identity limits. Every earlier
 * version is read (it is a later one without those: an empty audit log, no pending keys); a node
 * of an older version refuses a newer snapshot rather than misreading it.
 */
export const snapshotVersion = 3;
/** Versions restoreKeyStateInto accepts. */
export const snapshotVersionsRead: readonly unknown[] = [1, 2, 3];

export interface KeyStateSnapshot {
  version: number;
  apis: ApiRecord[];
  keys: KeyRecord[];
  identities: IdentityRecord[];
  permissions: PermissionRecord[];
  roles: RoleRecord[];
  namespaces: NamespaceRecord[];
  overrides: OverrideRecord[];
  /**
   * Keys as the key table holds them (key-table.ts EncodedKeys), after the records of `keys`: what
   * a node of this release sends instead of records, restored without decoding one. Absent from
   * snapshots built as records (snapshotKeyState, older releases).
   */
  encodedKeys?: EncodedKeys;
  /** Touched credit ledgers (a key without one has an untouched ledger of its `remaining`; older snapshots hold every ledger). */
  credits?: CreditLedgerRecord[];
  /** KeyState.retiredRootKeyHashes, oldest first (absent in older snapshots: none). */
  retiredRootKeyHashes?: string[];
  /** The audit log, oldest first, and the seq of its next entry (absent before version 2). */
  auditEntries?: AuditEntry[];
  auditNextSeq?: number;
}

/**
 * A snapshot of the moment it was taken, whose keys are read lazily (key-table.ts CapturedKeys):
 * what captureKeyState returns, for encoding in slices.
 */
export type KeyStateCapture = Omit<KeyStateSnapshot, "keys"> & { keys: CapturedKeys };

/** A capture with its keys read: snapshot-shaped, the records still shared with the state. */
export function readCapture(capture: KeyStateCapture): KeyStateSnapshot {
  return { ...capture, keys: capture.keys.slice(0) };
}

function copyLedger(ledger: CreditLedgerRecord): CreditLedgerRecord {
  return {
    ...ledger,
    leases: ledger.leases.length === 0 ? noLeases : ledger.leases.map((lease) => ({ ...lease })),
    seqFloors: ledger.seqFloors.length === 0 ? noFloors : ledger.seqFloors.map((floor) => ({ ...floor })),
  };
}

/** Deep copy of JSON-like data (meta objects), so a snapshot shares nothing with the live state. */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item: unknown) => cloneJson(item)) as T;
  const copy: JsonObject = {};
  for (const [name, item] of Object.entries(value as JsonObject)) copy[name] = cloneJson(item);
  return copy as T;
}

/**
 * The state at this moment, snapshot-shaped, as arrays of the live records (the keys as places in
 * the key table's arena, decoded when read): nothing is copied. Commands replace a record and
 * never change one in place (a property test checks it), and the arena's written bytes never
 * change, so a capture keeps describing the state of its moment while later commands apply. That
 * is what lets a node encode its snapshot in slices, between other work. Read it; never change it.
 *
 * The records are in the order of the state's maps, which is replicated state like the rest:
 * every replica inserts and deletes in the order of the log, and a restore inserts in the
 * snapshot's order, so a replica that applied the log and one restored from a snapshot of it hold
 * the same order. Nothing is sorted: sorting a million keys by id took about 4.4 s of CPU per
 * snapshot, and encoding them in id order (scattered in memory) took twice as long as in the
 * maps' order (docs/bench.md, measured 2026-12-01).
 */
export function captureKeyState(state: KeyState): KeyStateCapture {
  return {
    version: snapshotVersion,
    apis: [...state.apis.values()],
    // The slots' places, not the records: they are decoded slice by slice as they are encoded.
    keys: state.keys.capture(),
    identities: [...state.identities.values()],
    permissions: [...state.permissions.values()],
    roles: [...state.roles.values()],
    namespaces: [...state.namespaces.values()],
    overrides: [...state.overrides.values()],
    credits: [...state.creditLedgers.values()],
    retiredRootKeyHashes: [...state.retiredRootKeyHashes],
    // A copy of the array (later commands push and drop entries); the entries themselves never change.
    auditEntries: state.audit.entries.slice(),
    auditNextSeq: state.audit.nextSeq,
  };
}

function copyIdentity(identity: IdentityRecord): IdentityRecord {
  return {
    ...identity,
    meta: cloneJson(identity.meta),
    ratelimits: identity.ratelimits.map((limit) => ({ ...limit })),
  };
}

export function snapshotKeyState(state: KeyState): KeyStateSnapshot {
  const capture = captureKeyState(state);
  return {
    version: capture.version,
    apis: capture.apis.map((api) => ({ ...api })),
    keys: capture.keys.slice(0),
    identities: capture.identities.map(copyIdentity),
    permissions: capture.permissions.map((permission) => ({ ...permission })),
    roles: capture.roles.map((role) => ({ ...role, permissionIds: [...role.permissionIds] })),
    namespaces: capture.namespaces.map((namespace) => ({ ...namespace })),
    overrides: capture.overrides.map((override) => ({ ...override })),
    credits: (capture.credits ?? []).map(copyLedger),
    retiredRootKeyHashes: [...(capture.retiredRootKeyHashes ?? [])],
    auditEntries: (capture.auditEntries ?? []).map(copyAuditEntry),
    auditNextSeq: capture.auditNextSeq ?? 1,
  };
}

function copyAuditEntry(entry: AuditEntry): AuditEntry {
  return { ...entry, targetIds: [...entry.targetIds], changes: cloneJson(entry.changes) };
}

function isSnapshot(data: unknown): data is KeyStateSnapshot {
  if (typeof data !== "object" || data === null) return false;
  const snapshot = data as Record<string, unknown>;
  return (
    snapshotVersionsRead.includes(snapshot["version"]) &&
    ["apis", "keys", "identities", "permissions", "roles", "namespaces", "overrides"].every((name) =>
      Array.isArray(snapshot[name]),
    ) &&
    (snapshot["encodedKeys"] === undefined || isEncodedKeys(snapshot["encodedKeys"]))
  );
}

function isEncodedKeys(data: unknown): data is EncodedKeys {
  if (typeof data !== "object" || data === null) return false;
  const { limits, parts } = data as Record<string, unknown>;
  return (
    Array.isArray(limits) &&
    limits.every((list) => Array.isArray(list)) &&
    Array.isArray(parts) &&
    parts.every(
      (part) =>
        typeof part === "object" &&
        part !== null &&
        Array.isArray((part as Record<string, unknown>)["apiRuns"]) &&
        (part as Record<string, unknown>)["bytes"] instanceof Uint8Array,
    )
  );
}

/** Replaces the content of `state` with the snapshot (in place). Throws on malformed data. */
export function restoreKeyStateInto(state: KeyState, data: unknown): void {
  assert(isSnapshot(data), "restoreKeyState: not a key state snapshot of a version this node reads");
  clearKeyState(state);
  const steps = fillKeyState(state, data, Number.POSITIVE_INFINITY, copyRecord);
  while (!steps.next().done);
}

/**
 * Replaces the content of `state` with the snapshot in steps of about `recordsPerStep` records
 * each (the caller runs one step per event-loop turn, so a large restore never blocks the loop).
 * The records go into a fresh state; `state` is untouched until the last step, which moves the
 * fresh state's maps into it at once: a reader between steps sees the whole old state, never a
 * part of the new one. The result equals restoreKeyStateInto's. Throws on malformed data (then
 * `state` is unchanged).
 */
export function* restoreKeyStateSteps(
  state: KeyState,
  data: unknown,
  recordsPerStep: number,
  ownership: SnapshotOwnership = "copy",
): Generator<void, void> {
  assert(recordsPerStep >= 1, "restoreKeyStateSteps: at least one record per step");
  assert(isSnapshot(data), "restoreKeyState: not a key state snapshot of a version this node reads");
  const fresh = createKeyState();
  clearKeyState(fresh);
  yield* fillKeyState(fresh, data, recordsPerStep, ownership === "adopt" ? adoptRecord : copyRecord);
  Object.assign(state, fresh);
}

/**
 * Whether a restore copies the snapshot's records ("copy": the caller keeps using the snapshot,
 * as tests and snapshotKeyState's users do) or takes them over ("adopt": the snapshot was just
 * decoded from bytes and nothing else holds it, so copying a million records would only cost
 * time and garbage; the records may then be compacted in place).
 */
export type SnapshotOwnership = "copy" | "adopt";

interface RecordTaker {
  key(key: KeyRecord): KeyRecord;
  identity(identity: IdentityRecord): IdentityRecord;
  ledger(ledger: CreditLedgerRecord): CreditLedgerRecord;
  audit(entry: AuditEntry): AuditEntry;
  shallow<T extends object>(record: T): T;
}

const copyRecord: RecordTaker = {
  // The key table keeps a key's bytes, never the object it was given: nothing to copy.
  key: (key) => key,
  identity: copyIdentity,
  ledger: copyLedger,
  audit: copyAuditEntry,
  shallow: (record) => ({ ...record }),
};

const adoptRecord: RecordTaker = {
  key: (key) => key,
  identity: (identity) => identity,
  ledger: (ledger) => {
    // Untouched ledgers share the empty lists, as created ones do.
    if (ledger.leases.length === 0) ledger.leases = noLeases;
    if (ledger.seqFloors.length === 0) ledger.seqFloors = noFloors;
    return ledger;
  },
  audit: (entry) => entry,
  shallow: (record) => record,
};

/** Fills an empty `state` from the snapshot, yielding after every `recordsPerStep` records. */
function* fillKeyState(
  state: KeyState,
  data: KeyStateSnapshot,
  recordsPerStep: number,
  take: RecordTaker,
): Generator<void, void> {
  let recordsInStep = 0;
  // One call per record: true when the step is full (the caller then yields).
  const counted = (): boolean => {
    recordsInStep++;
    if (recordsInStep < recordsPerStep) return false;
    recordsInStep = 0;
    return true;
  };
  for (const api of data.apis) {
    state.apis.set(api.id, take.shallow(api));
    if (counted()) yield;
  }
  for (const permission of data.permissions) {
    state.permissions.set(permission.id, take.shallow(permission));
    indexPermissionSlug(state, permission.slug, permission.id);
    if (counted()) yield;
  }
  for (const role of data.roles) {
    state.roles.set(role.id, take === copyRecord ? { ...role, permissionIds: [...role.permissionIds] } : role);
    indexRoleName(state, role.name, role.id);
    if (counted()) yield;
  }
  for (const identity of data.identities) {
    state.identities.set(identity.id, take.identity(identity));
    state.identityIdByExternalId.set(identity.externalId, identity.id);
    if (counted()) yield;
  }
  // Snapshots taken before untouched ledgers were left out hold one per key with credits: only
  // the touched ones are kept, the canonical form of the map (credit-ledgers.ts).
  for (const ledger of data.credits ?? []) {
    if (!isUntouchedLedger(ledger)) state.creditLedgers.set(ledger.keyId, take.ledger(ledger));
    if (counted()) yield;
  }
  for (const hash of data.retiredRootKeyHashes ?? []) state.retiredRootKeyHashes.add(hash);
  for (const key of data.keys) {
    indexKey(state, take.key(key));
    if (counted()) yield;
  }
  if (data.encodedKeys !== undefined) {
    const limits = new LimitsOfSnapshot(data.encodedKeys.limits);
    // Sized once for every key: growing step by step rebuilt the indexes at each doubling, a
    // million keys at a time in one step at the end.
    state.keys.reserve(data.encodedKeys.parts.reduce((sum, part) => sum + encodedPartRecords(part), 0));
    for (const part of data.encodedKeys.parts) {
      state.keys.loadEncoded(part, limits);
      recordsInStep += encodedPartRecords(part);
      if (recordsInStep >= recordsPerStep) {
        recordsInStep = 0;
        yield;
      }
    }
  }
  for (const keyId of state.creditLedgers.keys())
    assert(state.keys.has(keyId), "restoreKeyState: a credit ledger of a missing key");
  for (const namespace of data.namespaces) {
    state.namespaces.set(namespace.id, take.shallow(namespace));
    state.namespaceIdByName.set(namespace.name, namespace.id);
    if (counted()) yield;
  }
  for (const override of data.overrides) {
    state.overrides.set(override.id, take.shallow(override));
    const index = state.overrideIdsByNamespace.get(override.namespaceId) ?? new Map<string, string>();
    index.set(override.identifier, override.id);
    state.overrideIdsByNamespace.set(override.namespaceId, index);
    indexWildcardOverride(state, state.overrides.get(override.id)!);
    if (counted()) yield;
  }
  const auditEntries = data.auditEntries ?? [];
  state.audit = { entries: auditEntries.map(take.audit), nextSeq: data.auditNextSeq ?? 1 };
  assert(
    auditEntries.every(
      (entry, i) => entry.seq < state.audit.nextSeq && (i === 0 || auditEntries[i - 1]!.seq < entry.seq),
    ),
    "restoreKeyState: audit entries in seq order, below nextSeq",
  );
  assert(state.apis.get(ROOT_API_ID)?.deleteProtected === true, "restoreKeyState: the root api exists");
}

/** A fresh state from a snapshot. */
export function restoreKeyState(data: unknown): KeyState {
  const state = createKeyState();
  restoreKeyStateInto(state, data);
  return state;
}
