// Restart with the real key-state machine: the command log (with snapshots every few entries)
// restores exactly the state the live machine had, including spent credits.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { keyStateMachine, sha256Base64, snapshotKeyState, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import { decodeValue, encodeValue, replaysEqual } from "../src/store/codec.js";
import { LevelCommandLog } from "../src/store/level-command-log.js";
import { openStoreDb, type StoreDb } from "../src/store/level-db.js";

const dirs: string[] = [];
const dbs: StoreDb[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) if (db.status === "open") await db.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function openDb(dir: string): Promise<StoreDb> {
  const db = await openStoreDb(dir);
  dbs.push(db);
  return db;
}
const noFatal = (error: Error) => {
  throw new Error(`unexpected fatal: ${error.message}`);
};

const t0 = Date.UTC(2026, 0, 1);
function createKey(keyId: string, remaining: number | null): KeyCommand {
  return {
    type: "createKey",
    keyId,
    apiId: "api_e2e",
    hash: sha256Base64(`secret_${keyId}`),
    start: "e2e_abc",
    name: keyId,
    ownerId: null,
    identity: { externalId: `user_${keyId}`, newIdentityId: `id_${keyId}` },
    meta: { plan: "pro", nested: { list: [1, 2, null] } },
    expiresAtMs: null,
    remaining,
    refill: null,
    ratelimit: { limit: 10, durationMs: 60_000 },
    enabled: true,
    environment: null,
    permissions: [{ name: "docs.read", newId: `perm_${keyId}`, create: true }],
    roles: [{ name: "reader", newId: `role_${keyId}`, create: true }],
    allowCreatePermissions: true,
    allowCreateRoles: true,
    nowMs: t0,
  };
}

const keyIds = ["key_a", "key_b", "key_c"];
const commandArb: fc.Arbitrary<KeyCommand> = fc.oneof(
  fc
    .record({ keyId: fc.constantFrom(...keyIds), cost: fc.integer({ min: 0, max: 3 }) })
    .map(({ keyId, cost }): KeyCommand => ({ type: "spendCredits", keyId, cost, nowMs: t0 + 1 })),
  fc.record({ keyId: fc.constantFrom(...keyIds), enabled: fc.boolean() }).map(({ keyId, enabled }): KeyCommand => ({
    type: "updateKey",
    keyId,
    nowMs: t0 + 2,
    enabled,
    meta: { flip: enabled },
  })),
  fc
    .record({ identifier: fc.constantFrom("a", "b*", "c"), limit: fc.integer({ min: 0, max: 100 }) })
    .map(({ identifier, limit }): KeyCommand => ({
      type: "setOverride",
      overrideId: `rlor_${identifier}_${limit}`,
      namespaceId: "rlns_e2e",
      identifier,
      limit,
      durationMs: 60_000,
      async: null,
      nowMs: t0 + 3,
    })),
  fc.constantFrom(...keyIds).map((keyId): KeyCommand => ({ type: "deleteKey", keyId })),
  fc
    .constantFrom("a", "b*")
    .map((identifier): KeyCommand => ({ type: "deleteOverride", namespaceId: "rlns_e2e", identifier })),
);

describe("restart with the key-state machine", () => {
  it("restores exactly the live state (snapshots + log tail) for random command sequences", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(commandArb, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 12 }),
        async (commands, snapshotEveryEntries) => {
          const dir = await mkdtemp(join(tmpdir(), "keyraft-restart-"));
          dirs.push(dir);
          let db = await openDb(dir);
          const live = keyStateMachine();
          const log = await LevelCommandLog.open<KeyCommand, CommandOutcome>(db, live, {
            onFatal: noFatal,
            snapshotEveryEntries,
          });
          const setup: KeyCommand[] = [
            { type: "createApi", apiId: "api_e2e", name: "e2e", nowMs: t0 },
            { type: "createNamespace", namespaceId: "rlns_e2e", name: "e2e", nowMs: t0 },
            createKey("key_a", 20),
            createKey("key_b", null),
            createKey("key_c", 5),
          ];
          const outcomes = await Promise.all([...setup, ...commands].map((command) => log.append(command)));
          expect(outcomes.slice(0, setup.length).every((outcome) => outcome.ok)).toBe(true);
          await log.close();
          await db.close();

          db = await openDb(dir);
          const restarted = keyStateMachine();
          const reopened = await LevelCommandLog.open<KeyCommand, CommandOutcome>(db, restarted, {
            onFatal: noFatal,
            snapshotEveryEntries,
          });
          expect(reopened.appliedIndex()).toBe(setup.length + commands.length);
          expect(isDeepStrictEqual(snapshotKeyState(restarted.state), snapshotKeyState(live.state))).toBe(true);
          for (const keyId of keyIds)
            expect(restarted.state.keys.get(keyId)?.remaining).toBe(live.state.keys.get(keyId)?.remaining);
          await db.close();
        },
      ),
      { numRuns: 15 },
    );
  });

  it("every command and the state snapshot survive encoding unchanged", () => {
    const machine = keyStateMachine();
    const commands: KeyCommand[] = [
      { type: "createApi", apiId: "api_e2e", name: "e2e", nowMs: t0 },
      createKey("key_a", 3),
    ];
    for (const command of commands) {
      expect(replaysEqual(command, decodeValue(encodeValue(command)))).toBe(true);
      machine.apply(command);
    }
    const snapshot = machine.snapshot();
    expect(isDeepStrictEqual(decodeValue(encodeValue(snapshot)), snapshot)).toBe(true);
  });
});
