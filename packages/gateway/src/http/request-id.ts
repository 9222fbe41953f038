// The header carrying the request id on every answer, error or not. Set in one place: the
// onRequest hook of http/lifecycle.ts (and the error handler, for errors raised before hooks run).
export const requestIdHeader = "Unkey-Request-Id";
