// How many credits a lease may take. Deterministic (it runs inside the replicated apply): the
// inputs are the ledger record, the command and the voter set at the applied index.
import { assert } from "../assert.js";

export interface CreditLeasePolicy {
  /**
   * At or below this many unleased credits the key runs low: only its owner (rendezvous hash of
   * the key id over the voters) gets leases, so the last credits are not stranded in many small
   * leases on many nodes; the other nodes forward such verifications to the owner.
   */
  lowWatermark: number;
  /** Above the low mark one lease takes at most unleased / (voters * shareDivisor). */
  shareDivisor: number;
}

export const creditLeasePolicyDefaults: CreditLeasePolicy = { lowWatermark: 64, shareDivisor: 2 };

export interface LeaseGrantSize {
  granted: number;
  low: boolean;
}

/** The grant for a request of `requested` credits when `unleased` are left. */
export function leaseGrantSize(
  requested: number,
  unleased: number,
  voterCount: number,
  isOwner: boolean,
  policy: CreditLeasePolicy,
): LeaseGrantSize {
  assert(Number.isSafeInteger(requested) && requested >= 1, "leaseGrantSize: requested >= 1");
  assert(Number.isSafeInteger(unleased) && unleased >= 0, "leaseGrantSize: unleased >= 0");
  assert(Number.isInteger(voterCount) && voterCount >= 1, "leaseGrantSize: at least one voter");
  assert(policy.lowWatermark >= 0 && policy.shareDivisor >= 1, "leaseGrantSize: policy in range");
  if (unleased <= policy.lowWatermark) {
    return { granted: isOwner ? Math.min(requested, unleased) : 0, low: true };
  }
  const share = Math.max(1, Math.floor(unleased / (voterCount * policy.shareDivisor)));
  const granted = Math.min(requested, share);
  assert(granted >= 1 && granted <= unleased, "leaseGrantSize: a grant fits the unleased credits");
  return { granted, low: false };
}
