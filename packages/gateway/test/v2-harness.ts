// Helpers of the v2 route tests over the in-memory harness (app-harness.ts).

import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { Harness } from "./app-harness.js";

export interface V2Problem {
  meta: { requestId: string };
  error: {
    title: string;
    detail: string;
    status: number;
    type: string;
    errors?: { location: string; message: string }[];
  };
}

/** POSTs a v2 route (`group.op`), with the root key unless `token` is given (null = no header). */
export function v2(h: Harness, route: string, body: unknown, token?: string | null): Promise<LightMyRequestResponse> {
  return h.post(`/v2/${route}`, body, token);
}

/** `data` of a 200 envelope (asserts the status and meta.requestId). */
export function dataOf<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  expect(response.statusCode, response.body).toBe(200);
  const body = response.json() as { meta: { requestId: string }; data: T };
  expect(body.meta.requestId).toMatch(/^req_/);
  return body.data;
}

/**
 * The problem body of an error, asserting status, content type (application/json: the tests send
 * no Accept, as the official client sends application/json) and the `type` URL's tail.
 */
export function problemOf(response: LightMyRequestResponse, status: number, typeTail: string): V2Problem["error"] {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers["content-type"]).toMatch(/^application\/json/);
  const body = response.json() as V2Problem;
  expect(body.meta.requestId).toMatch(/^req_/);
  expect(body.error.status).toBe(status);
  expect(body.error.type).toBe(`https://unkey.com/docs/errors/${typeTail}`);
  if (status === 400) expect(Array.isArray(body.error.errors)).toBe(true);
  return body.error;
}
