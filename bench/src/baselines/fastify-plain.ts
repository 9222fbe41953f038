// Baseline (a): a plain Fastify JSON route that parses the request body and returns a small JSON
// object shaped like a verification answer. No schema, no logger: the ceiling of the HTTP stack.
// Started by the harness as its own process, under the same conditions as a keyraft node.
import Fastify from "fastify";
import { listenFromEnv } from "./listen.js";

const app = Fastify({ logger: false });

app.get("/v1/liveness", async () => ({ status: "we're so back", services: {} }));
app.post("/v1/keys.verifyKey", async (request) => {
  const body = request.body as { key?: unknown } | null;
  const key = typeof body?.key === "string" ? body.key : "";
  return { valid: key !== "", code: key !== "" ? "VALID" : "NOT_FOUND", keyId: "key_baseline", enabled: true };
});

await listenFromEnv(app);
