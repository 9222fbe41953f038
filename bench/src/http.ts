// Small JSON-over-HTTP helpers for set-up work (readiness checks, seeding); not used for load.
import { request } from "undici";
import { SetupRequestError } from "./errors.js";

export interface JsonResponse {
  status: number;
  body: unknown;
}

export async function postJson(
  baseUrl: string,
  path: string,
  body: unknown,
  rootKey: string | null,
): Promise<JsonResponse> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (rootKey !== null) headers["authorization"] = `Bearer ${rootKey}`;
  let status: number, text: string;
  try {
    const response = await request(`${baseUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    status = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    throw new SetupRequestError(`POST ${baseUrl}${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { status, body: parseOrText(text) };
}

export async function getStatus(baseUrl: string, path: string): Promise<number> {
  const response = await request(`${baseUrl}${path}`, { method: "GET", headersTimeout: 2_000, bodyTimeout: 2_000 });
  await response.body.dump();
  return response.statusCode;
}

/** Reads `field` of a JSON object answer as a string, or throws with the answer for diagnosis. */
export function stringField(response: JsonResponse, field: string, what: string): string {
  const body = response.body;
  if (response.status >= 200 && response.status < 300 && typeof body === "object" && body !== null) {
    const value = (body as Record<string, unknown>)[field];
    if (typeof value === "string") return value;
  }
  throw new SetupRequestError(`${what} failed: HTTP ${response.status} ${JSON.stringify(body).slice(0, 500)}`);
}

export function expectOk(response: JsonResponse, what: string): void {
  if (response.status < 200 || response.status >= 300) {
    throw new SetupRequestError(
      `${what} failed: HTTP ${response.status} ${JSON.stringify(response.body).slice(0, 500)}`,
    );
  }
}

function parseOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** GET a JSON answer (set-up and status checks), with a root key when given; a transport error or a non-JSON answer throws. */
export async function getJson(baseUrl: string, path: string, rootKey?: string): Promise<JsonResponse> {
  const response = await request(`${baseUrl}${path}`, {
    method: "GET",
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
    ...(rootKey === undefined ? {} : { headers: { authorization: `Bearer ${rootKey}` } }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: JSON.parse(text) as unknown };
}
