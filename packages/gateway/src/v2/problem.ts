// The v2 error model (docs/api-v2.md): every error is a problem document
// `{meta:{requestId}, error:{title, detail, status, type, errors?}}`. `type` is upstream's
// documentation URL of the error code, so clients that branch on it work unchanged; `errors` is
// present on every 400 (possibly empty). Its Content-Type: errorContentType below.

/** Base of every upstream error type URL: `<base><system>/<category>/<code>`. */
export const problemTypeBase = "https://unkey.com/docs/errors/";

export const problemContentType = "application/problem+json";

/**
 * The Content-Type of an error answer. The official client types an error (BadRequestErrorResponse,
 * NotFoundErrorResponse, ...) only when status and Content-Type match its table: application/json
 * for 400..404, 409..412, 422, 500, 503; application/problem+json for 429 and for every error of a
 * route marked `problemJsonOnly` (identities.deleteIdentity). So: problem+json for 429, for those
 * routes, and when the request's Accept asks for it (`application/problem+json`, `application/*`,
 * `*\/*`, as upstream negotiates); application/json otherwise (the client sends
 * `Accept: application/json`). The body is the same problem document either way.
 */
export function errorContentType(status: number, accept: string | undefined, problemJsonOnly: boolean): string {
  if (status === 429 || problemJsonOnly) return problemContentType;
  if (
    accept !== undefined &&
    /(^|[\s,])(application\/problem\+json|application\/\*|\*\/\*)(\s*[;,]|\s*$)/i.test(accept)
  ) {
    return problemContentType;
  }
  return "application/json";
}

/**
 * Every v2 error keyraft answers: status, title and the `<system>/<category>/<code>` path of its
 * type. The `keyraft/...` entries are keyraft's own (upstream answers those cases without a v2
 * body); every other path is upstream's.
 */
export const problemRegistry = {
  invalid_input: { status: 400, title: "Bad Request", path: "unkey/application/invalid_input" },
  authentication_missing: { status: 400, title: "Bad Request", path: "unkey/authentication/missing" },
  authentication_malformed: { status: 400, title: "Bad Request", path: "unkey/authentication/malformed" },
  permissions_query_syntax_error: {
    status: 400,
    title: "Bad Request",
    path: "user/bad_request/permissions_query_syntax_error",
  },
  request_body_unreadable: { status: 400, title: "Bad Request", path: "user/bad_request/request_body_unreadable" },
  invalid_analytics_query: { status: 400, title: "Bad Request", path: "user/bad_request/invalid_analytics_query" },
  invalid_analytics_table: { status: 400, title: "Bad Request", path: "user/bad_request/invalid_analytics_table" },
  invalid_analytics_function: {
    status: 400,
    title: "Bad Request",
    path: "user/bad_request/invalid_analytics_function",
  },
  invalid_analytics_query_type: {
    status: 400,
    title: "Bad Request",
    path: "user/bad_request/invalid_analytics_query_type",
  },
  query_range_exceeds_retention: {
    status: 400,
    title: "Bad Request",
    path: "user/bad_request/query_range_exceeds_retention",
  },
  root_key_not_found: { status: 401, title: "Unauthorized", path: "unkey/authentication/key_not_found" },
  insufficient_permissions: {
    status: 403,
    title: "Insufficient Permissions",
    path: "unkey/authorization/insufficient_permissions",
  },
  key_disabled: { status: 403, title: "Key is disabled", path: "unkey/authorization/key_disabled" },
  forbidden: { status: 403, title: "Forbidden", path: "unkey/authorization/forbidden" },
  key_not_found: { status: 404, title: "Not Found", path: "unkey/data/key_not_found" },
  api_not_found: { status: 404, title: "Not Found", path: "unkey/data/api_not_found" },
  identity_not_found: { status: 404, title: "Not Found", path: "unkey/data/identity_not_found" },
  permission_not_found: { status: 404, title: "Not Found", path: "unkey/data/permission_not_found" },
  role_not_found: { status: 404, title: "Not Found", path: "unkey/data/role_not_found" },
  ratelimit_namespace_not_found: {
    status: 404,
    title: "Not Found",
    path: "unkey/data/ratelimit_namespace_not_found",
  },
  ratelimit_override_not_found: { status: 404, title: "Not Found", path: "unkey/data/ratelimit_override_not_found" },
  migration_not_found: { status: 404, title: "Not Found", path: "unkey/data/migration_not_found" },
  route_not_found: { status: 404, title: "Not Found", path: "keyraft/routing/route_not_found" },
  identity_already_exists: {
    status: 409,
    title: "Conflicting Resource",
    path: "unkey/data/identity_already_exists",
  },
  permission_already_exists: {
    status: 409,
    title: "Conflicting Resource",
    path: "unkey/data/permission_already_exists",
  },
  role_already_exists: { status: 409, title: "Conflicting Resource", path: "unkey/data/role_already_exists" },
  ratelimit_namespace_gone: { status: 410, title: "Resource Gone", path: "unkey/data/ratelimit_namespace_gone" },
  protected_resource: {
    status: 412,
    title: "Resource is protected",
    path: "unkey/application/protected_resource",
  },
  precondition_failed: { status: 412, title: "Precondition Failed", path: "unkey/application/precondition_failed" },
  request_body_too_large: {
    status: 413,
    title: "Request Entity Too Large",
    path: "user/bad_request/request_body_too_large",
  },
  unexpected_error: { status: 500, title: "Internal Server Error", path: "unkey/application/unexpected_error" },
  service_unavailable: { status: 503, title: "Service Unavailable", path: "unkey/application/service_unavailable" },
} as const satisfies Record<string, { status: number; title: string; path: string }>;

export type ProblemCode = keyof typeof problemRegistry;

/** One entry of a 400's `errors[]`: where and what; `fix` only when there is advice. */
export interface ProblemDetail {
  location: string;
  message: string;
  fix?: string;
}

export interface ProblemBody {
  meta: { requestId: string };
  error: {
    title: string;
    detail: string;
    status: number;
    type: string;
    errors?: ProblemDetail[];
  };
}

export function problemType(code: ProblemCode): string {
  return problemTypeBase + problemRegistry[code].path;
}

/** An error a v2 route throws; the v2 error handler answers it with its problem body. */
export class V2Error extends Error {
  override name = "V2Error";
  readonly code: ProblemCode;
  readonly statusCode: number;
  readonly errors: readonly ProblemDetail[];
  /** Extra response headers (Retry-After on a 503). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    code: ProblemCode,
    detail: string,
    options?: { errors?: ProblemDetail[]; headers?: Record<string, string>; cause?: unknown },
  ) {
    super(detail, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.statusCode = problemRegistry[code].status;
    this.errors = options?.errors ?? [];
    this.headers = options?.headers ?? {};
  }
}

/** The body of `error` for `requestId`. `errors` is sent on every 400 (upstream: required there). */
export function problemBody(error: V2Error, requestId: string): ProblemBody {
  const entry = problemRegistry[error.code];
  const body: ProblemBody = {
    meta: { requestId },
    error: { title: entry.title, detail: error.message, status: entry.status, type: problemType(error.code) },
  };
  if (entry.status === 400 || error.errors.length > 0) body.error.errors = [...error.errors];
  return body;
}

/** Shorthands for the errors routes throw most. */
export const invalidInput = (detail: string, location = "body"): V2Error =>
  new V2Error("invalid_input", detail, { errors: [{ location, message: detail }] });
export const insufficientPermissions = (detail: string): V2Error => new V2Error("insufficient_permissions", detail);
