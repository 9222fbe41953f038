// Baseline (b): what users would deploy today instead of keyraft: a Fastify route that checks a
// per-key rate limit with rate-limiter-flexible on a local Redis (one Redis round trip per request).
import Fastify from "fastify";
import { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { listenFromEnv } from "./listen.js";

const redisPort = Number(process.env["REDIS_PORT"]);
if (!Number.isInteger(redisPort) || redisPort <= 0)
  throw new Error("REDIS_PORT must be set to the port of redis-server");
const limit = Number(process.env["BASELINE_LIMIT"] ?? "1000");
const durationS = Number(process.env["BASELINE_DURATION_S"] ?? "1");

const redis = new Redis({ host: "127.0.0.1", port: redisPort, enableOfflineQueue: true, maxRetriesPerRequest: 1 });
const limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix: "bench", points: limit, duration: durationS });
const app = Fastify({ logger: false });

app.get("/v1/liveness", async (_request, reply) => {
  if (redis.status !== "ready") return reply.code(503).send({ status: redis.status });
  return { status: "ok" };
});
app.post("/v1/keys.verifyKey", async (request) => {
  const body = request.body as { key?: unknown } | null;
  const key = typeof body?.key === "string" ? body.key : "";
  try {
    const result = await limiter.consume(key, 1);
    return {
      valid: true,
      code: "VALID",
      ratelimit: { limit, remaining: result.remainingPoints, reset: Date.now() + result.msBeforeNext },
    };
  } catch (rejection) {
    // rate-limiter-flexible rejects with a RateLimiterRes when limited, with an Error when Redis fails.
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    return {
      valid: false,
      code: "RATE_LIMITED",
      ratelimit: { limit, remaining: 0, reset: Date.now() + rejection.msBeforeNext },
    };
  }
});
app.addHook("onClose", async () => {
  redis.disconnect();
});

await listenFromEnv(app);
