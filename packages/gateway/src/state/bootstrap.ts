// The first root key. `KEYRAFT_ROOT_KEY` makes that exact string a root key holding `*`; without
// it, a node whose state has no root key generates one and returns its plaintext once (main
// prints it). Idempotent: a restart with the same state appends nothing.
//
// KEYRAFT_ROOT_KEY bootstraps once, then the API governs it: a key from the environment that was
// disabled, expired or stripped of `*` is not repaired, and one deleted through the API (its hash
// is remembered: KeyState.retiredRootKeyHashes) is not created again at the next start (`ignored`
// says why; main logs a warning). A key the state never held is still added, which is how an
// operator gets back in when a generated key was never printed (docs/operations.md).

import {
  keyDerived,
  keyStart,
  newKeySecret,
  ROOT_API_ID,
  ROOT_PERMISSION,
  type CommandOutcome,
  type KeyCommand,
  type KeyState,
} from "@keyraft/core";
import { auditRetentionMs } from "../audit/config.js";
import { hashKey } from "../auth/hash.js";
import type { CommandLog } from "../store/types.js";
import { IdSource } from "./ids.js";

export interface BootstrapRootKeyOptions {
  state: KeyState;
  commandLog: CommandLog<KeyCommand, CommandOutcome>;
  nowMs(): number;
  randomBytes(length: number): Uint8Array;
  /** KEYRAFT_ROOT_KEY, or null. */
  rootKey: string | null;
  /** KEYRAFT_AUDIT_RETENTION_DAYS (default 90): the creation is an audit entry by no root key (actor null). */
  auditRetentionDays?: number;
}

export interface BootstrapRootKeyResult {
  keyId: string;
  /** Whether a command was appended (a key created or repaired). */
  changed: boolean;
  /** The plaintext of a key generated now: print it once, it is never stored. */
  generatedKey: string | null;
  /**
   * Why KEYRAFT_ROOT_KEY was not made a working root key: "revoked" (its key exists but is
   * disabled, expired or lacks `*`), "deleted" (deleted through the API). null otherwise.
   */
  ignored: "revoked" | "deleted" | null;
}

/** Random bytes of a generated root key. */
export const generatedRootKeyBytes = 24;

function isHealthyRootKey(state: KeyState, hash: string, nowMs: number): string | undefined {
  const key = state.keys.getByHash(hash);
  if (key === undefined || key.apiId !== ROOT_API_ID || !key.enabled) return undefined;
  if (key.expiresAtMs !== null && key.expiresAtMs < nowMs) return undefined;
  return keyDerived(state, key).slugs.has(ROOT_PERMISSION) ? key.id : undefined;
}

export async function bootstrapRootKey(options: BootstrapRootKeyOptions): Promise<BootstrapRootKeyResult> {
  const { state } = options;
  const ids = new IdSource(options.randomBytes, options.nowMs);
  let secret = options.rootKey;
  let generatedKey: string | null = null;
  if (secret === null) {
    const rootKeyId = state.keys.idsOfApi(ROOT_API_ID)[0];
    if (rootKeyId !== undefined) return { keyId: rootKeyId, changed: false, generatedKey: null, ignored: null };
    secret = newKeySecret("unkey", options.randomBytes(generatedRootKeyBytes));
    generatedKey = secret;
  }
  const hash = hashKey(secret);
  const healthy = isHealthyRootKey(state, hash, options.nowMs());
  if (healthy !== undefined) return { keyId: healthy, changed: false, generatedKey: null, ignored: null };
  const existing = state.keys.getByHash(hash);
  if (existing !== undefined && existing.apiId === ROOT_API_ID) {
    return { keyId: existing.id, changed: false, generatedKey: null, ignored: "revoked" };
  }
  if (existing === undefined && state.retiredRootKeyHashes.has(hash)) {
    return { keyId: "", changed: false, generatedKey: null, ignored: "deleted" };
  }
  const outcome = await options.commandLog.append({
    type: "ensureRootKey",
    keyId: ids.next("key"),
    hash,
    start: keyStart(secret, undefined),
    permissionId: ids.next("perm"),
    nowMs: options.nowMs(),
    audit: {
      actorKeyId: null,
      requestId: ids.next("req"),
      atMs: options.nowMs(),
      retentionMs: auditRetentionMs(options.auditRetentionDays),
    },
  });
  if (!outcome.ok) throw new Error(`bootstrapRootKey: ${outcome.code}: ${outcome.message}`);
  return { keyId: outcome.id ?? "", changed: true, generatedKey, ignored: null };
}
