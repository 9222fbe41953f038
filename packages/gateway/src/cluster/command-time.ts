// A command's time (`nowMs`) is the proposer's wall clock, and every replica applies it as given:
// creation and update times, a refill instant reached (refillDueBetween), the refill a spend
// materializes. A proposer whose clock is days ahead would refill keys now and suppress the next
// midnight refills, whatever the other clocks say. The leader therefore clamps the time of every
// command forwarded to it to its own clock, within `commandClockSkewMaxMs`, before proposing it
// (docs/counters.md, "Clocks"): the log then carries times no further than that from the
// leader's clock, whichever node proposed.
import { decodeValue, encodeValue } from "../store/codec.js";
import { encodeBatch, isBatch } from "./entry-codec.js";

/** How far a forwarded command's time may be from the leader's clock. */
export const commandClockSkewMaxMs = 1_000;

const commandTag = 1;

/** One encoded entry with its command's `nowMs` clamped; the same bytes when nothing changed. */
function clampPart(part: Uint8Array, leaderNowMs: number, skewMaxMs: number): Uint8Array {
  const value = decodeValue(part);
  if (!Array.isArray(value) || value[0] !== commandTag) return part;
  const command: unknown = value[3];
  if (typeof command !== "object" || command === null) return part;
  const nowMs = (command as { nowMs?: unknown }).nowMs;
  if (typeof nowMs !== "number") return part;
  const clamped = Math.min(Math.max(nowMs, leaderNowMs - skewMaxMs), leaderNowMs + skewMaxMs);
  if (clamped === nowMs) return part;
  return encodeValue([value[0], value[1], value[2], { ...command, nowMs: clamped }]);
}

/** A forwarded proposal (one entry or a batch) with every command's time clamped to the leader's clock. */
export function clampCommandTimes(
  data: Uint8Array,
  leaderNowMs: number,
  skewMaxMs: number = commandClockSkewMaxMs,
): Uint8Array {
  if (!isBatch(data)) return clampPart(data, leaderNowMs, skewMaxMs);
  const parts = (decodeValue(data) as unknown[]).slice(1) as Uint8Array[];
  const clamped = parts.map((part) => clampPart(part, leaderNowMs, skewMaxMs));
  return clamped.every((part, i) => part === parts[i]) ? data : encodeBatch(clamped);
}
