import type { VerificationFilter, VerificationSeries } from "@keyraft/core";

/**
 * The other nodes of a cluster: each answers with its own series for `filter`; the route merges
 * them with this node's (mergeVerificationSeries). Wired by the cluster; absent on one node.
 */
export interface VerificationPeers {
  fetch(filter: VerificationFilter): Promise<VerificationSeries[]>;
}
