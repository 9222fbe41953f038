import type { VerifyCode } from "../verify/types.js";
import type { OutcomeCounts, OutcomeField } from "./types.js";

export const outcomeFields: readonly OutcomeField[] = [
  "valid",
  "notFound",
  "forbidden",
  "usageExceeded",
  "rateLimited",
  "unauthorized",
  "disabled",
  "insufficientPermissions",
  "expired",
];

export function emptyCounts(): OutcomeCounts {
  return {
    valid: 0,
    notFound: 0,
    forbidden: 0,
    usageExceeded: 0,
    rateLimited: 0,
    unauthorized: 0,
    disabled: 0,
    insufficientPermissions: 0,
    expired: 0,
  };
}

export function outcomeField(code: VerifyCode): OutcomeField {
  switch (code) {
    case "VALID":
      return "valid";
    case "NOT_FOUND":
      return "notFound";
    case "FORBIDDEN":
      return "forbidden";
    case "USAGE_EXCEEDED":
      return "usageExceeded";
    case "RATE_LIMITED":
      return "rateLimited";
    case "UNAUTHORIZED":
      return "unauthorized";
    case "DISABLED":
      return "disabled";
    case "INSUFFICIENT_PERMISSIONS":
      return "insufficientPermissions";
    case "EXPIRED":
      return "expired";
    default: {
      const unreachable: never = code;
      throw new Error(`outcomeField: unknown code ${String(unreachable)}`);
    }
  }
}

/** Adds `from` into `into` (in place). */
export function addCounts(into: OutcomeCounts, from: OutcomeCounts): void {
  for (const field of outcomeFields) into[field] += from[field];
}

export function totalOf(counts: OutcomeCounts): number {
  let total = 0;
  for (const field of outcomeFields) total += counts[field];
  return total;
}
