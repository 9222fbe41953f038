// Snapshots of version 4 carry the key table's bytes (core EncodedKeys) instead of key records,
// and install without decoding one; version 3 snapshots (records, as earlier releases wrote them)
// still install. Both give the state the snapshot was taken of.
import { keyHasConnections, keyHasIdentity, keyStateMachine, type KeyCommand, type KeyRecord } from "@keyraft/core";
import { joinSnapshotData } from "@keyraft/raft";
import { describe, expect, it } from "vitest";
import { decodeSnapshot, encodeSnapshotSliced, encodedKeysSliceRecords } from "../src/cluster/entry-codec.js";
import { ReplicatedKeyMachine } from "../src/cluster/replicated-machine.js";
import { decodeValue } from "../src/store/codec.js";

const keyCount = 9_000; // more than two encoded parts
const nowMs = Date.UTC(2026, 0, 10);

function setup(): ReturnType<typeof keyStateMachine> {
  const machine = keyStateMachine();
  const commands: KeyCommand[] = [
    { type: "createApi", apiId: "api_a", name: "a", nowMs },
    { type: "createApi", apiId: "api_b", name: "b", nowMs },
    { type: "createPermission", permissionId: "perm_1", name: "p", slug: "p.read", description: null, nowMs },
    { type: "createRole", roleId: "role_1", name: "r", description: null, permissionIds: ["perm_1"], nowMs },
    {
      type: "createIdentity",
      identityId: "id_1",
      externalId: "ext_1",
      environment: "default",
      meta: null,
      ratelimits: [],
      nowMs,
    },
  ];
  for (const command of commands) expect(machine.apply(command).ok).toBe(true);
  for (let i = 0; i < keyCount; i++) {
    const outcome = machine.apply({
      type: "createKey",
      keyId: `key_${(i * 7919) % keyCount}`,
      apiId: i % 5 === 0 ? "api_b" : "api_a",
      hash: `hash_${i}`,
      start: "sk_",
      name: i % 7 === 0 ? `näme ${i}` : null,
      ownerId: i % 11 === 0 ? `owner_${i}` : null,
      identity: i % 13 === 0 ? { externalId: "ext_1", newIdentityId: "id_unused" } : null,
      meta: i % 2 === 0 ? { plan: "pro", seq: i } : null,
      expiresAtMs: i % 17 === 0 ? nowMs + i : null,
      remaining: i % 3 === 0 || i % 19 === 0 ? 100 + i : null,
      refill: i % 19 === 0 ? { interval: "monthly", amount: 10, refillDay: 3 } : null,
      ratelimit: i % 4 === 0 ? null : { limit: 10 + (i % 3), durationMs: 60_000 },
      enabled: i % 23 !== 0,
      environment: null,
      permissions: i % 29 === 0 ? [{ name: "p.read", newId: "perm_unused" }] : [],
      roles: i % 31 === 0 ? [{ name: "r", newId: "role_unused" }] : [],
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    } as KeyCommand);
    if (!outcome.ok) throw new Error(JSON.stringify(outcome));
  }
  // Replaced and deleted keys leave their bytes behind in the arena: the snapshot holds the live ones.
  expect(machine.apply({ type: "updateKey", keyId: "key_5", name: "renamed", nowMs }).ok).toBe(true);
  expect(machine.apply({ type: "deleteKey", keyId: "key_6" }).ok).toBe(true);
  expect(machine.apply({ type: "spendCredits", keyId: "key_0", cost: 1, nowMs }).ok).toBe(true);
  return machine;
}

async function bytesOf(machine: ReturnType<typeof keyStateMachine>): Promise<Uint8Array> {
  const replicated = new ReplicatedKeyMachine(machine, { origin: "n1/x", onOwnApplied: () => {}, onPeer: () => {} });
  return joinSnapshotData(await replicated.takeSnapshot());
}

function headerVersion(bytes: Uint8Array): number {
  expect(bytes[0]).toBe(0xc1);
  const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(1);
  return (decodeValue(bytes.subarray(5, 5 + length)) as { v: number }).v;
}

describe("snapshots with the key table's bytes (version 4)", () => {
  it("carry the keys as encoded parts and install to the same state, order, indexes and scans", async () => {
    const machine = setup();
    const bytes = await bytesOf(machine);
    expect(headerVersion(bytes)).toBe(4);
    const decoded = decodeSnapshot(bytes).keys as { keys: KeyRecord[]; encodedKeys: { parts: unknown[] } };
    expect(decoded.keys).toEqual([]);
    expect(decoded.encodedKeys.parts.length).toBe(Math.ceil((keyCount - 1) / encodedKeysSliceRecords));
    const restored = keyStateMachine();
    restored.restore(decoded);
    expect(restored.snapshot()).toEqual(machine.snapshot());
    expect(restored.state.keys.idOfHash("hash_5")).toBe(machine.state.keys.idOfHash("hash_5"));
    expect(restored.state.keys.get("key_5")?.name).toBe("renamed");
    expect(restored.state.keys.has("key_6")).toBe(false);
    expect([...restored.state.keys.valuesWith(keyHasConnections)]).toEqual([
      ...machine.state.keys.valuesWith(keyHasConnections),
    ]);
    expect(restored.state.keys.idsOfApi("api_b")).toEqual(machine.state.keys.idsOfApi("api_b"));
    expect([...restored.state.keys.valuesWith(keyHasIdentity)].length).toBe(Math.ceil(keyCount / 13));
    // The restored state goes on like the original.
    for (const m of [machine, restored])
      expect(m.apply({ type: "updateKey", keyId: "key_7", ratelimits: [], nowMs } as KeyCommand).ok).toBe(true);
    expect(restored.snapshot()).toEqual(machine.snapshot());
  });

  it("a version 3 snapshot of records (an earlier release's) installs to the same state", async () => {
    const machine = setup();
    const parts = await encodeSnapshotSliced({ keys: machine.snapshot(), peers: {} }, async () => {});
    const bytes = joinSnapshotData(parts);
    expect(headerVersion(bytes)).toBe(3);
    const restored = keyStateMachine();
    restored.restore(decodeSnapshot(bytes).keys);
    expect(restored.snapshot()).toEqual(machine.snapshot());
  });

  it("refuses an encoded part whose records run past their bytes", async () => {
    const machine = setup();
    const decoded = decodeSnapshot(await bytesOf(machine)).keys as {
      encodedKeys: { parts: { apiRuns: (string | number)[]; bytes: Uint8Array }[] };
    };
    const part = decoded.encodedKeys.parts[0]!;
    part.bytes = part.bytes.subarray(0, part.bytes.byteLength - 3);
    expect(() => keyStateMachine().restore(decoded)).toThrow(/past the end/);
  });
});
