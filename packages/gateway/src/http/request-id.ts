// The header carrying the request id on every answer, error or not. Set in one place: the
// onRequest hook of http/lifecycle.ts.
export const requestIdHeader = "Unkey-Request-Id";
