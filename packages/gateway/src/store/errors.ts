// Coded errors of the durable store. Operating errors carry a stable `code`; the routes map
// `KEYRAFT_STORE_OVERLOADED` to 503 with a Retry-After (the write was not applied and may be
// retried), `KEYRAFT_STORE_UNENCODABLE` to 400, and the others to 500 (the process is stopping).

export type StoreErrorCode =
  | "KEYRAFT_STORE_OVERLOADED"
  | "KEYRAFT_STORE_CLOSED"
  | "KEYRAFT_STORE_FAILED"
  | "KEYRAFT_STORE_CORRUPT"
  | "KEYRAFT_STORE_UNENCODABLE";

export class StoreError extends Error {
  override name = "StoreError";
  readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options?: { cause: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Too many writes are waiting for the disk: this one was rejected before it took effect. */
export function overloadedError(what: string, pendingMax: number): StoreError {
  return new StoreError(
    "KEYRAFT_STORE_OVERLOADED",
    `${what}: more than ${pendingMax} writes are waiting for the disk; nothing was changed, retry later`,
  );
}

export function closedError(what: string): StoreError {
  return new StoreError("KEYRAFT_STORE_CLOSED", `${what} is closed; nothing was changed`);
}

/** A write to disk failed: the process must stop, since memory is now ahead of the disk. */
export function failedError(what: string, cause: unknown): StoreError {
  return new StoreError("KEYRAFT_STORE_FAILED", `${what}: a write to disk failed; the node must stop`, { cause });
}

/** The state machine threw while applying: memory may be half-changed and is not in the log. */
export function applyFailedError(what: string, cause: unknown): StoreError {
  return new StoreError(
    "KEYRAFT_STORE_FAILED",
    `${what}: the state machine threw while applying a command; the node must stop`,
    { cause },
  );
}

export function corruptError(what: string, detail: string, cause?: unknown): StoreError {
  const message = `${what}: data on disk is corrupt: ${detail}`;
  return cause === undefined
    ? new StoreError("KEYRAFT_STORE_CORRUPT", message)
    : new StoreError("KEYRAFT_STORE_CORRUPT", message, { cause });
}

export function isStoreError(error: unknown, code?: StoreErrorCode): error is StoreError {
  return error instanceof StoreError && (code === undefined || error.code === code);
}

/** A command that would not decode to an equal value (so replay would diverge): refused, not applied. */
export function unencodableError(what: string): StoreError {
  return new StoreError(
    "KEYRAFT_STORE_UNENCODABLE",
    `${what}: the command does not survive encoding unchanged (e.g. a "__proto__" key); nothing was changed`,
  );
}
