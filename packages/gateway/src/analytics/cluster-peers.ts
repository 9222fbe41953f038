// VerificationPeers over the cluster RPC: every other member (voters and learners) is asked, in
// parallel, for its own series matching the query (op "analytics", answered from its recorder);
// the route merges them with this node's. Analytics are per node and never replicated, so a
// member that does not answer within `timeoutMs` (down, partitioned, slow, too much to send) is
// left out: the answer then counts only the nodes that answered (never more than happened), and a
// warning names the missing members. The v1 response shape stays the same.
import { outcomeFields, type VerificationFilter, type VerificationSeries } from "@keyraft/core";
import type { NodeId } from "@keyraft/raft";
import type { Logger } from "pino";
import type { RpcResult } from "../cluster/rpc.js";
import type { VerificationPeers } from "./peers.js";

/** Default wait for one member's answer. */
export const analyticsPeerTimeoutMsDefault = 1000;
/** Series one member sends at most for one query (about 150 bytes each; the transport's message limit is 8 MiB). */
export const analyticsPeerSeriesMax = 40_000;

export interface AnalyticsPeerLink {
  /** The other members that may hold analytics (every voter and learner but this node). */
  members(): NodeId[];
  /** Asks `peer` for its series matching `filter` (op "analytics"). */
  ask(peer: NodeId, filter: VerificationFilter): Promise<RpcResult>;
}

export class ClusterVerificationPeers implements VerificationPeers {
  constructor(
    private readonly link: AnalyticsPeerLink,
    private readonly options: { timeoutMs: number; logger: Logger },
  ) {}

  async fetch(filter: VerificationFilter): Promise<VerificationSeries[]> {
    const members = this.link.members();
    const answers = await Promise.all(members.map((peer) => this.askOne(peer, filter)));
    const series: VerificationSeries[] = [];
    const missing: { nodeId: NodeId; reason: string }[] = [];
    answers.forEach((answer, i) => {
      const nodeId = members[i] as NodeId;
      if (typeof answer === "string") missing.push({ nodeId, reason: answer });
      else for (const item of answer) series.push(item);
    });
    if (missing.length > 0) {
      this.options.logger.warn(
        { apiId: filter.apiId, missing, asked: members.length },
        "analytics: partial answer, the counts leave out the verifications of members that did not answer",
      );
    }
    return series;
  }

  /** The member's series, or why it is left out. */
  private async askOne(peer: NodeId, filter: VerificationFilter): Promise<VerificationSeries[] | string> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${this.options.timeoutMs} ms`), this.options.timeoutMs);
    });
    try {
      const answer = await Promise.race([
        this.link.ask(peer, filter).then(
          (result): VerificationSeries[] | string => {
            if (!result.ok) return result.message;
            if (!Array.isArray(result.series) || !result.series.every(isSeries)) return "malformed answer";
            return result.series;
          },
          (error: unknown) => (error instanceof Error ? error.message : String(error)),
        ),
        timeout,
      ]);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** What a member answers for op "analytics": its own series, or a refusal when there are too many to send. */
export function answerAnalytics(
  select: ((filter: VerificationFilter) => VerificationSeries[]) | null,
  filter: unknown,
): RpcResult {
  if (select === null) return { ok: false, retry: false, message: "analytics are not served yet" };
  if (!isFilter(filter)) return { ok: false, retry: false, message: "malformed analytics filter" };
  const series = select(filter);
  if (series.length > analyticsPeerSeriesMax) {
    return {
      ok: false,
      retry: false,
      message: `${series.length} series match, more than the ${analyticsPeerSeriesMax} a member sends`,
    };
  }
  return { ok: true, index: 0, series };
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function isFilter(value: unknown): value is VerificationFilter {
  if (typeof value !== "object" || value === null) return false;
  const filter = value as Record<string, unknown>;
  return (
    (filter["apiId"] === undefined || typeof filter["apiId"] === "string") &&
    (filter["apiIds"] === undefined || isStringArray(filter["apiIds"])) &&
    Number.isFinite(filter["startMs"]) &&
    Number.isFinite(filter["endMs"]) &&
    (filter["keyIds"] === undefined || isStringArray(filter["keyIds"])) &&
    (filter["identityId"] === undefined || typeof filter["identityId"] === "string") &&
    (filter["tags"] === undefined || isStringArray(filter["tags"]))
  );
}

function isSeries(value: unknown): value is VerificationSeries {
  if (typeof value !== "object" || value === null) return false;
  const series = value as Record<string, unknown>;
  const counts = series["counts"] as Record<string, unknown> | null | undefined;
  return (
    Number.isFinite(series["hourMs"]) &&
    typeof series["keyId"] === "string" &&
    typeof series["apiId"] === "string" &&
    (series["identityId"] === null || typeof series["identityId"] === "string") &&
    (series["externalId"] === undefined || series["externalId"] === null || typeof series["externalId"] === "string") &&
    (series["spentCredits"] === undefined ||
      (Number.isSafeInteger(series["spentCredits"]) && (series["spentCredits"] as number) >= 0)) &&
    isStringArray(series["tags"]) &&
    typeof counts === "object" &&
    counts !== null &&
    outcomeFields.every((field) => Number.isSafeInteger(counts[field]) && (counts[field] as number) >= 0)
  );
}
