// The v1 error model: codes, their HTTP statuses (upstream's codeToStatus, UNAUTHORIZED is 403),
// the error body {error:{code,docs,message,requestId}} and the error every route throws.

/** Every code a v1 error body can carry, with its status. */
export const errorStatusByCode = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 403,
  FORBIDDEN: 403,
  INSUFFICIENT_PERMISSIONS: 403,
  DISABLED: 403,
  EXPIRED: 403,
  USAGE_EXCEEDED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  DELETE_PROTECTED: 412,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
} as const;

export type V1ErrorCode = keyof typeof errorStatusByCode;

export function isV1ErrorCode(code: string): code is V1ErrorCode {
  return Object.hasOwn(errorStatusByCode, code);
}

export function docsUrl(code: V1ErrorCode): string {
  return `https://unkey.dev/docs/api-reference/errors/code/${code}`;
}

/**
 * An operating error answered with the v1 error body. `statusCode` is the code's status unless
 * given (413 for an oversized body, 503 for an overloaded store: statuses the v1 table lacks).
 */
export class V1Error extends Error {
  override name = "V1Error";
  readonly code: V1ErrorCode;
  readonly statusCode: number;
  /** Extra response headers (Retry-After). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    code: V1ErrorCode,
    message: string,
    options?: { statusCode?: number; headers?: Record<string, string>; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.statusCode = options?.statusCode ?? errorStatusByCode[code];
    this.headers = options?.headers ?? {};
  }
}

export interface V1ErrorBody {
  error: { code: V1ErrorCode; docs: string; message: string; requestId: string };
}

export function errorBody(code: V1ErrorCode, message: string, requestId: string): V1ErrorBody {
  return { error: { code, docs: docsUrl(code), message, requestId } };
}

/** Shorthands for the errors routes throw most. */
export const badRequest = (message: string): V1Error => new V1Error("BAD_REQUEST", message);
export const notFound = (message: string): V1Error => new V1Error("NOT_FOUND", message);
export const unauthorized = (message: string): V1Error => new V1Error("UNAUTHORIZED", message);
export const insufficientPermissions = (message: string): V1Error => new V1Error("INSUFFICIENT_PERMISSIONS", message);

/** keyraft stores no recoverable (encrypted) copies of keys (decision 10). */
export const recoverableUnsupported = (): V1Error =>
  new V1Error("PRECONDITION_FAILED", "recoverable keys are not supported by keyraft yet");
