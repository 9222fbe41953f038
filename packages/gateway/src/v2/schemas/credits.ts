// Credits of a key: the balance (null = unlimited) and its refill rule, in v2's shape.

import { keyCreditsAt, type KeyRecord, type RefillInput } from "@keyraft/core";
import type { ShownCredits } from "../../counters/credits/shown-credits.js";
import { Type, type Static } from "@sinclair/typebox";
import { countMax } from "../../schemas/common.js";
import { V2Error } from "../problem.js";

export const RefillRequest = Type.Object(
  {
    interval: Type.Union([Type.Literal("daily"), Type.Literal("monthly")]),
    amount: Type.Integer({ minimum: 1, maximum: countMax }),
    refillDay: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 })),
  },
  { additionalProperties: false },
);
export type RefillRequest = Static<typeof RefillRequest>;

/** `credits` of createKey and migrateKeys: `remaining: null` = unlimited. */
export const CreditsRequest = Type.Object(
  {
    remaining: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: countMax }), Type.Null()])),
    refill: Type.Optional(RefillRequest),
  },
  { additionalProperties: false },
);
export type CreditsRequest = Static<typeof CreditsRequest>;

export const RefillResponse = Type.Object({
  interval: Type.Union([Type.Literal("daily"), Type.Literal("monthly")]),
  amount: Type.Integer(),
  refillDay: Type.Optional(Type.Integer()),
});

export const CreditsResponse = Type.Object({
  remaining: Type.Union([Type.Integer(), Type.Null()]),
  refill: Type.Optional(RefillResponse),
});
export type CreditsResponse = Static<typeof CreditsResponse>;

const monthlyNeedsDay = "`refillDay` must be provided when the refill interval is `monthly`.";

/** The stored refill of a request's refill; a monthly one needs its day (400). */
export function refillInput(refill: RefillRequest, location: string): RefillInput {
  if (refill.interval === "monthly" && refill.refillDay === undefined) {
    throw new V2Error("invalid_input", monthlyNeedsDay, { errors: [{ location, message: monthlyNeedsDay }] });
  }
  return {
    interval: refill.interval,
    amount: refill.amount,
    refillDay: refill.interval === "monthly" ? (refill.refillDay ?? null) : null,
  };
}

/** createKey/migrateKeys credits as the stored balance and refill (400 on refill without a balance). */
export function creditsInput(
  credits: CreditsRequest | undefined,
  location: string,
): { remaining: number | null; refill: RefillInput | null } {
  if (credits === undefined) return { remaining: null, refill: null };
  const remaining = credits.remaining ?? null;
  if (credits.refill !== undefined && remaining === null) {
    const detail = "`credits.remaining` must be provided when `credits.refill` is set.";
    throw new V2Error("invalid_input", detail, { errors: [{ location: `${location}/remaining`, message: detail }] });
  }
  return {
    remaining,
    refill: credits.refill === undefined ? null : refillInput(credits.refill, `${location}/refill`),
  };
}

/**
 * The key's credits now (a refill due by `nowMs` counted), or undefined when unlimited without a
 * refill (`remaining: null` with the refill it will fill from); as this node shows them
 * (counters/credits/shown-credits.ts) when it has credit leases.
 */
export function creditsView(key: KeyRecord, nowMs: number, shown?: ShownCredits): CreditsResponse | undefined {
  const remaining = shown === undefined ? keyCreditsAt(key, nowMs) : shown.at(key, nowMs);
  if (remaining === null) return key.refill === null ? undefined : { remaining: null, ...refillView(key) };
  return { remaining, ...refillView(key) };
}

/** `{refill}` when the key has a rule: monthly when it has a day, daily otherwise. */
export function refillView(key: KeyRecord): { refill?: Static<typeof RefillResponse> } {
  if (key.refill === null) return {};
  return key.refill.refillDay === null
    ? { refill: { interval: "daily", amount: key.refill.amount } }
    : { refill: { interval: "monthly", amount: key.refill.amount, refillDay: key.refill.refillDay } };
}
