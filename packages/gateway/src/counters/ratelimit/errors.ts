// The 503 a rate-limited request gets while its limit's serving node cannot judge it (an owner
// unreachable, a takeover or hand-back in progress): the v1 error body, nothing admitted.
import { V1Error } from "../../errors.js";

export const limitUnavailableRetryAfterSeconds = "1";

export function limitUnavailable(message: string): V1Error {
  return new V1Error("INTERNAL_SERVER_ERROR", `rate limit unavailable: ${message}`, {
    statusCode: 503,
    headers: { "Retry-After": limitUnavailableRetryAfterSeconds },
  });
}

/** Resolves or rejects with `promise`, or rejects with `onTimeout()` after `timeoutMs`. */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
