// What every route needs: the dependencies plus the derived helpers (ids, hashing, the command
// append that maps outcomes to v1 errors). Built once by buildApp.

import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { V1Error } from "./errors.js";
import type { AppDeps } from "./app.js";
import { IdSource } from "./state/ids.js";
import { VerificationRecorder } from "./analytics/recorder.js";
import type { VerifiedAnswer } from "./counters/ratelimit/cluster-limits.js";
import type { VerifyFields } from "./counters/ratelimit/wire.js";

export interface GatewayContext {
  deps: AppDeps;
  ids: IdSource;
  analytics: VerificationRecorder;
  /** Appends a command and waits for its durability; a refused command becomes its v1 error. */
  submit(command: KeyCommand): Promise<Extract<CommandOutcome, { ok: true }>>;
  /**
   * Verifies the key of `hash` with v1-shaped fields through the one verification path (decide,
   * cover counts, spend credits, record analytics), here or at the node serving its limits. Set
   * by the verify route's registration; the v2 route translates to and from it.
   */
  verifyHash(hash: string, fields: VerifyFields, requestId: string): Promise<VerifiedAnswer>;
}

export function createContext(deps: AppDeps): GatewayContext {
  const ids = new IdSource(deps.randomBytes, deps.nowMs);
  return {
    deps,
    ids,
    analytics: deps.analytics ?? new VerificationRecorder(deps.nowMs),
    verifyHash() {
      return Promise.reject(new Error("verifyHash: the verify route is not registered"));
    },
    async submit(command) {
      const outcome = await deps.commandLog.append(command);
      if (!outcome.ok) throw new V1Error(outcome.code, outcome.message);
      return outcome;
    },
  };
}
