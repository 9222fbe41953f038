// Errors of the cluster command log, answered 503 with the v1 error body (the write may be
// retried; the message says whether it may have taken effect).
import { V1Error } from "../errors.js";

export const retryAfterSeconds = "1";

/** Nothing was proposed: no leader was reachable before the deadline. Safe to retry. */
export function noLeaderError(timeoutMs: number): V1Error {
  return unavailable(
    `no cluster leader could take the write within ${timeoutMs} ms ` +
      "(an election may be in progress or a majority of nodes is unreachable); nothing was changed, retry later",
  );
}

/** The write was proposed but this node did not see it applied in time: it may or may not have taken effect. */
export function outcomeUnknownError(detail: string): V1Error {
  return unavailable(
    `the write was sent to the cluster leader but its outcome is unknown (${detail}); it may or may not have taken effect: read before retrying`,
  );
}

export function shuttingDownError(): V1Error {
  return unavailable("this node is shutting down; nothing was changed, retry on another node");
}

export function unavailable(message: string): V1Error {
  return new V1Error("INTERNAL_SERVER_ERROR", message, {
    statusCode: 503,
    headers: { "Retry-After": retryAfterSeconds },
  });
}
