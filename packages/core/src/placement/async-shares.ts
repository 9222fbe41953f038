// The overshoot budget of an `async: true` limit and how it is shared (docs/counters.md, Theorem 6).
// A node may hold admissions of a limit that not every live peer has confirmed up to its share:
// a fixed floor, the same on every node, plus a weighted part that follows the nodes' recent
// traffic (AsyncLimitEstimator.trafficWeight): a node that takes most of a limit's traffic borrows
// the weighted part an idle node leaves unused. In any window the cluster admits at most
// limit + (nodes - 1) * floor + weighted budget = limit + asyncOvershootMax(limit, nodes).
import { asyncOvershootFraction } from "./async-estimator.js";

/** The part of the overshoot budget every node always has, split over the other nodes. */
export const asyncFloorFraction = 0.25;

/**
 * A node's floor share: a quarter of the budget (a tenth of the limit) split over the other nodes,
 * at least 1 (so a limit below 40 * (nodes - 1) still admits one unconfirmed request per node).
 * Unlimited on a single node.
 */
export function asyncShareFloor(limit: number, nodes: number): number {
  if (nodes <= 1) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor((asyncFloorFraction * asyncOvershootFraction * limit) / (nodes - 1)));
}

/** What the floors leave of the budget: shared by traffic weights that sum to at most 1 per epoch. */
export function asyncWeightedBudget(limit: number, nodes: number): number {
  if (nodes <= 1) return 0;
  return Math.max(0, asyncOvershootFraction * limit - (nodes - 1) * asyncShareFloor(limit, nodes));
}

/**
 * The most a window admits beyond `limit` (Theorem 6): the other nodes' floors plus the weighted
 * budget, i.e. max(a tenth of the limit, (nodes - 1) * floor); 0 on a single node.
 */
export function asyncOvershootMax(limit: number, nodes: number): number {
  if (nodes <= 1) return 0;
  // = (nodes - 1) * floor + asyncWeightedBudget, written without the rounding of the subtraction.
  return Math.max((nodes - 1) * asyncShareFloor(limit, nodes), asyncOvershootFraction * limit);
}
