// A small JSON client for the v1 API with a per-request timeout. A timeout or a connection error
// is an unknown outcome (the request may have been applied), reported as status 0.
export interface HttpAnswer {
  status: number;
  body: unknown;
}

export async function call(
  baseUrl: string,
  path: string,
  body: unknown,
  rootKey: string | null,
  timeoutMs: number,
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (rootKey !== null) headers["authorization"] = `Bearer ${rootKey}`;
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: response.status, body: parsed };
  } catch {
    return { status: 0, body: null };
  }
}

export function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null ? (body as Record<string, unknown>)[name] : undefined;
}

/** Whether a failed write certainly did not take effect (a 4xx, or a 503 that says nothing was changed). */
export function certainlyNotApplied(answer: HttpAnswer): boolean {
  if (answer.status >= 400 && answer.status < 500) return true;
  if (answer.status === 503) {
    const message = String(field(field(answer.body, "error"), "message") ?? "");
    return /nothing was changed/i.test(message);
  }
  return false;
}
