// The refusals of the analytics SQL subset. `type` is the v2 error type's last part
// (docs/api-v2.md: https://unkey.com/docs/errors/user/bad_request/<type>); the gateway builds the body.

export type AnalyticsSqlErrorType =
  | "invalid_analytics_query"
  | "invalid_analytics_table"
  | "invalid_analytics_function"
  | "invalid_analytics_query_type"
  | "query_range_exceeds_retention";

export interface AnalyticsSqlRefusal {
  ok: false;
  type: AnalyticsSqlErrorType;
  message: string;
}

/** Thrown inside the parser and evaluator, caught at their entry points (never escapes the module). */
export class AnalyticsSqlError extends Error {
  override name = "AnalyticsSqlError";
  constructor(
    readonly type: AnalyticsSqlErrorType,
    message: string,
  ) {
    super(message);
  }
}

export const invalidQuery = (message: string): AnalyticsSqlError =>
  new AnalyticsSqlError("invalid_analytics_query", message);

/** Runs `body`, turning an AnalyticsSqlError into its refusal; any other error is a bug and propagates. */
export function refusing<T>(body: () => T): T | AnalyticsSqlRefusal {
  try {
    return body();
  } catch (error) {
    if (error instanceof AnalyticsSqlError) return { ok: false, type: error.type, message: error.message };
    throw error;
  }
}
