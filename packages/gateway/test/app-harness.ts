// A gateway over in-memory state for route tests: memory command log, volatile counters, a clock
// the test moves, and a root key holding `*`.

import { randomBytes } from "node:crypto";
import { keyStateMachine, SlidingWindowLimiter, type CommandOutcome, type KeyCommand } from "@keyraft/core";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import {
  bootstrapRootKey,
  buildApp,
  MemoryCommandLog,
  volatileCounterDurability,
  type AppDeps,
} from "@keyraft/gateway";

export const rootKey = "test_root_key_0123456789";

export interface Harness {
  app: FastifyInstance;
  machine: ReturnType<typeof keyStateMachine>;
  log: MemoryCommandLog<KeyCommand, CommandOutcome>;
  clock: { nowMs: number };
  post(url: string, body: unknown, token?: string | null): Promise<LightMyRequestResponse>;
  get(url: string, token?: string | null): Promise<LightMyRequestResponse>;
  /** createApi + createKey through the API; returns ids and the plaintext. */
  createKey(body: Record<string, unknown>, apiId?: string): Promise<{ apiId: string; keyId: string; key: string }>;
  createApi(name?: string): Promise<string>;
  /** Creates a root key holding exactly these permissions. */
  rootKeyWith(permissions: string[]): Promise<string>;
}

export async function harness(options: { bodyLimitBytes?: number; deps?: Partial<AppDeps> } = {}): Promise<Harness> {
  const machine = keyStateMachine();
  const log = new MemoryCommandLog<KeyCommand, CommandOutcome>(machine);
  const clock = { nowMs: Date.UTC(2026, 0, 10, 12) };
  const nowMs = () => clock.nowMs;
  await bootstrapRootKey({ state: machine.state, commandLog: log, nowMs, randomBytes, rootKey });
  const app = buildApp({
    logger: pino({ level: "silent" }),
    state: machine.state,
    commandLog: log,
    limiter: new SlidingWindowLimiter(),
    counterDurability: volatileCounterDurability,
    nowMs,
    randomBytes,
    bodyLimitBytes: options.bodyLimitBytes ?? 1_048_576,
    ...options.deps,
  });
  await app.ready();
  const headers = (token: string | null | undefined) =>
    token === null ? {} : { authorization: `Bearer ${token ?? rootKey}` };
  const post = (url: string, body: unknown, token?: string | null) =>
    app.inject({
      method: "POST",
      url,
      payload: JSON.stringify(body),
      headers: { "content-type": "application/json", ...headers(token) },
    });
  const get = (url: string, token?: string | null) => app.inject({ method: "GET", url, headers: headers(token) });
  const createApi = async (name = "my-api") => {
    const response = await post("/v1/apis.createApi", { name });
    if (response.statusCode !== 200) throw new Error(response.body);
    return (response.json() as { apiId: string }).apiId;
  };
  const h: Harness = {
    app,
    machine,
    log,
    clock,
    post,
    get,
    createApi,
    async createKey(body, apiId) {
      const api = apiId ?? (await createApi());
      const response = await post("/v1/keys.createKey", { apiId: api, ...body });
      if (response.statusCode !== 200) throw new Error(response.body);
      const created = response.json() as { keyId: string; key: string };
      return { apiId: api, ...created };
    },
    async rootKeyWith(permissions) {
      const created = await h.createKey({ permissions }, "api_root");
      return created.key;
    },
  };
  return h;
}

export function errorOf(response: LightMyRequestResponse): {
  code: string;
  message: string;
  docs: string;
  requestId: string;
} {
  return (response.json() as { error: { code: string; message: string; docs: string; requestId: string } }).error;
}
