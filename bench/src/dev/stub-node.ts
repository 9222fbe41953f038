// A tiny in-memory imitation of the v1 endpoints the scenarios call, used to develop the harness
// itself while the real gateway is unavailable (`--node-entry bench/dist/dev/stub-node.js`).
// It is NOT a baseline and NOT keyraft: no durability, no real rate limiting, no validation.
import { createHash, randomBytes } from "node:crypto";
import Fastify from "fastify";
import { listenFromEnv } from "../baselines/listen.js";

interface StubKey {
  keyId: string;
  apiId: string;
  name: string | null;
  remaining: number | null;
  permissions: Set<string>;
}
const keysByHash = new Map<string, StubKey>();
const keysById = new Map<string, StubKey>();
const counts = new Map<string, number>();
const rootKey = process.env["KEYRAFT_ROOT_KEY"] ?? "";
const keysMax = 2_000_000;
let nextId = 0;

const app = Fastify({ logger: false });
const hash = (key: string): string => createHash("sha256").update(key).digest("base64");
const authorized = (header: string | undefined): boolean => header === `Bearer ${rootKey}`;
type Body = Record<string, unknown>;

app.get("/v1/liveness", async () => ({ status: "ok" }));
app.addHook("preHandler", async (request, reply) => {
  if (request.url.startsWith("/v1/keys.verifyKey") || request.url.startsWith("/v1/liveness")) return;
  if (!authorized(request.headers.authorization)) await reply.code(401).send({ error: { code: "UNAUTHORIZED" } });
});
app.post("/v1/apis.createApi", async () => ({ apiId: `api_${nextId++}` }));
app.post("/v1/keys.createKey", async (request, reply) => {
  if (keysById.size >= keysMax) return reply.code(429).send({ error: { code: "TOO_MANY" } });
  const body = request.body as Body;
  const key = `bench_${randomBytes(16).toString("hex")}`;
  const entry: StubKey = {
    keyId: `key_${nextId++}`,
    apiId: String(body["apiId"]),
    name: typeof body["name"] === "string" ? body["name"] : null,
    remaining: typeof body["remaining"] === "number" ? body["remaining"] : null,
    permissions: new Set(Array.isArray(body["permissions"]) ? body["permissions"].map(String) : []),
  };
  keysByHash.set(hash(key), entry);
  keysById.set(entry.keyId, entry);
  return { keyId: entry.keyId, key };
});
app.post("/v1/keys.verifyKey", async (request) => {
  const body = request.body as Body;
  const entry = keysByHash.get(hash(String(body["key"])));
  if (entry === undefined) return { valid: false, code: "NOT_FOUND" };
  if (entry.remaining !== null) entry.remaining = Math.max(0, entry.remaining - 1);
  return {
    valid: true,
    code: "VALID",
    keyId: entry.keyId,
    name: entry.name,
    enabled: true,
    permissions: [...entry.permissions],
  };
});
app.post("/v1/keys.updateKey", async (request, reply) => {
  const body = request.body as Body;
  const entry = keysById.get(String(body["keyId"]));
  if (entry === undefined) return reply.code(404).send({ error: { code: "NOT_FOUND" } });
  if (typeof body["name"] === "string") entry.name = body["name"];
  return {};
});
app.post("/v1/keys.setPermissions", async (request, reply) => {
  const body = request.body as { keyId: string; permissions: Array<{ name: string }> };
  const entry = keysById.get(body.keyId);
  if (entry === undefined) return reply.code(404).send({ error: { code: "NOT_FOUND" } });
  entry.permissions = new Set(body.permissions.map((permission) => permission.name));
  return body.permissions.map((permission) => ({ id: `perm_${permission.name}`, name: permission.name }));
});
app.post("/v1/ratelimits.limit", async (request) => {
  const body = request.body as Body;
  const id = `${String(body["namespace"])}:${String(body["identifier"])}`;
  const used = (counts.get(id) ?? 0) + 1;
  if (counts.size < keysMax) counts.set(id, used);
  const limit = Number(body["limit"]);
  return { limit, remaining: Math.max(0, limit - used), reset: Date.now() + 1000, success: used <= limit };
});
app.post("/v1/ratelimits.setOverride", async () => ({ overrideId: `rlor_${nextId++}` }));

await listenFromEnv(app);
