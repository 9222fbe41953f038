// Keys imported by keys.migrateKeys under a migration whose hash is not keyraft's own (the seam
// prefixed-api-key form: `<prefix>_<short>_<long>`, stored as hex SHA-256 of `<long>`) wait for
// their first verification with the plaintext and a `migrationId`: then the key's hash is
// rewritten to keyraft's (base64 SHA-256 of the whole secret) in one replicated command, and
// from then on it verifies like any key.

import { createHash } from "node:crypto";
import type { KeyRecord } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import { V1Error } from "../errors.js";
import { hashKey } from "../auth/hash.js";
import type { GatewayServices } from "../services.js";
import type { KeyMigrationAlgorithm } from "../key-migrations.js";
import { V2Error } from "./problem.js";

/** The hash a migration stores for a secret it imports: what migrateKeys' `hash` must be. */
export function migrationHashOfSecret(algorithm: KeyMigrationAlgorithm, secret: string): string | null {
  if (algorithm === "sha256") return hashKey(secret);
  const parts = secret.split("_");
  if (parts.length < 3) return null;
  return createHash("sha256").update(parts.at(-1)!).digest("hex");
}

/** `start` of a completed seam key: `<prefix>_` and the first 4 characters after it. */
function seamStart(secret: string): string {
  const parts = secret.split("_");
  const prefix = parts.slice(0, -2).join("_");
  return `${prefix}_${parts.slice(-2).join("_").slice(0, 4)}`;
}

/**
 * Completes the migration of the key `secret` names when it is pending for `migrationId`;
 * returns the key (found by its new hash) or undefined. `mayVerify` decides, before anything is
 * written, whether the caller may verify that key at all. A malformed seam secret is 400.
 */
export async function migrateOnDemand(
  ctx: GatewayServices,
  request: FastifyRequest,
  secret: string,
  migrationId: string,
  mayVerify: (key: KeyRecord) => boolean,
): Promise<KeyRecord | undefined> {
  const { state } = ctx;
  const algorithm = ctx.keyMigrations?.get(migrationId);
  // sha256 keys are stored in keyraft's own form: the normal lookup already saw them.
  if (algorithm === undefined || algorithm === "sha256") return undefined;
  const migrationHash = migrationHashOfSecret(algorithm, secret);
  if (migrationHash === null) throw new V2Error("authentication_malformed", "Invalid key format");
  const pending = state.keys.getByHash(migrationHash);
  if (pending === undefined || pending.pendingMigrationId !== migrationId || !mayVerify(pending)) return undefined;
  const hash = hashKey(secret);
  // A concurrent verification may complete it first (then this command is refused): either way
  // the key is now found by its new hash.
  try {
    await ctx.submit(request, {
      type: "completeMigration",
      keyId: pending.id,
      migrationId,
      hash,
      start: seamStart(secret),
    });
  } catch (error) {
    // Refused: completed by a concurrent verification (or the key is gone); the lookup below tells.
    if (!(error instanceof V1Error) || error.statusCode >= 500) throw error;
  }
  return state.keys.getByHash(hash);
}
