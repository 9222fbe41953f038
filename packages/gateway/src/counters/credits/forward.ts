// Spends of a key's last credits forwarded to their owner (docs/counters.md, step 8). When a key
// runs low only its owner (rendezvous hash over the voters) gets leases; another node asks the
// owner to spend for it over the cluster channel rather than finding the ledger empty while the
// owner's lease holds the credits. The owner spends from its lease, or on the log, and answers
// the outcome; if the owner cannot be asked, the asking node spends on the log itself (exact).
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import { V1Error } from "../../errors.js";

export type ForwardedSpendReply =
  /** Spent by the owner; `remaining` as its verification would show it (null: unlimited now). */
  | { t: "admitted"; remaining: number | null }
  /** The key has not enough credits left for this cost (nothing spent). */
  | { t: "exceeded"; remaining: number }
  /** The owner could not decide (key unknown there, an error): the asker spends on the log. */
  | { t: "undecided"; message: string };

/**
 * A forwarded spend that reached the owner (or may have) and whose answer was lost: the owner may
 * have spent. The asker must not spend again on the log (that would charge twice); its
 * verification answers 503 (`creditSpendUnknown`).
 */
export class ForwardedSpendUnknown extends Error {
  constructor(owner: string, reason: string) {
    super(`credit spend forwarded to ${owner}: outcome unknown (${reason})`);
    this.name = "ForwardedSpendUnknown";
  }
}

/** The 503 of a verification whose forwarded credit spend has an unknown outcome. */
export function creditSpendUnknown(error: ForwardedSpendUnknown): V1Error {
  return new V1Error("INTERNAL_SERVER_ERROR", error.message, { statusCode: 503, headers: { "Retry-After": "1" } });
}

/**
 * What the cluster node offers (ClusterNode.creditTransport). `call` answers `undecided` when the
 * spend certainly did not reach the owner, and rejects with ForwardedSpendUnknown when it may have.
 */
export interface CreditTransport {
  call(peer: string, keyId: string, cost: number): Promise<ForwardedSpendReply>;
  serve(handler: (keyId: string, cost: number) => Promise<ForwardedSpendReply>): void;
}

/** A spend decided on the log (the `spendCredits` entry), as a reply. */
export async function spendOnLog(
  propose: (command: KeyCommand) => Promise<CommandOutcome>,
  keyId: string,
  cost: number,
  nowMs: number,
  /** The credits this node shows now (a refusal's `remaining`). */
  shown: () => number,
): Promise<ForwardedSpendReply> {
  const outcome = await propose({ type: "spendCredits", keyId, cost, nowMs });
  if (outcome.ok) return { t: "admitted", remaining: outcome.remaining ?? null };
  if (outcome.code === "USAGE_EXCEEDED") return { t: "exceeded", remaining: shown() };
  return { t: "undecided", message: outcome.message };
}
