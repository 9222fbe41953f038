// grantCreditLease, settleCreditLease, expireCreditLease, creditBatch and refillCredits: the
// credit-lease commands (docs/counters.md). A lease command never fails as a command: what the
// ledger did (granted, refused, settled, ignored...) is its outcome, and a key that is gone or
// unlimited gives a refusal ("empty") or "ignored", so a holder always hears back.
import { assert } from "../assert.js";
import { applyCreditLeaseCommand } from "../leases/ledger.js";
import { creditLeasePolicyDefaults } from "../leases/policy.js";
import type { CreditLeaseOutcome, ExpireCreditLeaseCommand, SettleCreditLeaseCommand } from "../leases/types.js";
import type {
  CreditBatchCommand,
  CreditBatchItem,
  GrantCreditLeaseKeyCommand,
  RefillCreditsCommand,
} from "./commands.js";
import { creditLedgerWith, putCredits, putLedger, refilledCredits } from "./credit-ledgers.js";
import { creditBatchCommandsMax, refillKeysPerCommandMax } from "./limits.js";
import { commandError, type CommandOutcome } from "./outcome.js";
import type { KeyState } from "./types.js";

/** Voters one grant may name (the cluster's membership bound). */
export const grantVotersMax = 64;

function leaseOutcome(state: KeyState, command: CreditBatchItem): CreditLeaseOutcome {
  const base = { keyId: command.keyId, nodeId: command.nodeId, seq: command.seq };
  // The key's balance alone, read from its bytes: a lease command needs no more of the record.
  const remaining = state.keys.remainingOf(command.keyId);
  const ledger = creditLedgerWith(state, command.keyId, remaining);
  if (remaining === undefined || ledger === undefined || (command.type === "grantCreditLease" && remaining === null)) {
    if (command.type === "grantCreditLease")
      return { type: "refused", ...base, reason: "empty", ownerNodeId: command.nodeId };
    return { type: "ignored", ...base };
  }
  const voters = command.type === "grantCreditLease" ? command.voters : [];
  let applied = command;
  if (command.type === "settleCreditLease") {
    // A holder never reports more than its grant; should a bug do so, count the whole grant as
    // spent (never more returned than is safe) rather than stop every replica on the assertion.
    const lease = ledger.leases.find((l) => l.nodeId === command.nodeId && l.seq === command.seq);
    if (lease !== undefined && command.spent > lease.granted) applied = { ...command, spent: lease.granted };
  }
  const { record, outcome } = applyCreditLeaseCommand(ledger, applied, { voters, policy: creditLeasePolicyDefaults });
  if (record !== ledger) putLedger(state, command.keyId, remaining, record);
  return outcome;
}

function invalidLease(command: CreditBatchItem): string | null {
  if (!Number.isSafeInteger(command.seq) || command.seq < 1) return "seq must be a positive integer";
  if (command.type === "grantCreditLease") {
    if (!Number.isSafeInteger(command.requested) || command.requested < 1)
      return "requested must be a positive integer";
    if (command.voters.length > grantVotersMax) return `at most ${grantVotersMax} voters`;
  }
  if (command.type === "settleCreditLease" && (!Number.isSafeInteger(command.spent) || command.spent < 0))
    return "spent must be a non-negative integer";
  return null;
}

export function applyCreditLease(
  state: KeyState,
  command: GrantCreditLeaseKeyCommand | SettleCreditLeaseCommand | ExpireCreditLeaseCommand,
): CommandOutcome {
  const invalid = invalidLease(command);
  if (invalid !== null) return commandError("BAD_REQUEST", `${command.type}: ${invalid}`);
  return { ok: true, lease: leaseOutcome(state, command) };
}

export function applyCreditBatch(state: KeyState, command: CreditBatchCommand): CommandOutcome {
  if (command.commands.length > creditBatchCommandsMax)
    return commandError("BAD_REQUEST", `creditBatch: at most ${creditBatchCommandsMax} commands`);
  for (const item of command.commands) {
    const invalid = invalidLease(item);
    if (invalid !== null) return commandError("BAD_REQUEST", `creditBatch ${item.type}: ${invalid}`);
  }
  const leases = command.commands.map((item) => leaseOutcome(state, item));
  assert(leases.length === command.commands.length, "creditBatch: one outcome per command");
  return { ok: true, leases };
}

/**
 * Materializes the refill due at the command's time on each listed key (missing keys and keys
 * without a due refill are skipped; an unlimited key with one becomes finite).
 */
export function applyRefillCredits(state: KeyState, command: RefillCreditsCommand): CommandOutcome {
  if (command.keyIds.length > refillKeysPerCommandMax)
    return commandError("BAD_REQUEST", `refillCredits: at most ${refillKeysPerCommandMax} keys`);
  let count = 0;
  for (const keyId of command.keyIds) {
    const key = state.keys.get(keyId);
    if (key === undefined) continue;
    const change = refilledCredits(state, key, command.nowMs);
    if (change.key === key) continue;
    putCredits(state, change);
    count++;
  }
  return { ok: true, count };
}
