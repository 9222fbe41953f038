// Seeds a deployment through its v1 HTTP API (exactly as a user would), with bounded concurrency.
import { expectOk, postJson, stringField } from "./http.js";
import { limits } from "./limits.js";

export interface SeededKey {
  keyId: string;
  key: string;
}

export interface SeedTarget {
  url: string;
  rootKey: string;
  log: (line: string) => void;
}

export async function createApi(target: SeedTarget, name: string): Promise<string> {
  const response = await postJson(target.url, "/v1/apis.createApi", { name }, target.rootKey);
  return stringField(response, "apiId", "apis.createApi");
}

/** Creates `count` keys; `bodyFor(i)` gives the createKey body (without apiId) of the i-th key. */
export async function createKeys(
  target: SeedTarget,
  apiId: string,
  count: number,
  what: string,
  bodyFor: (index: number) => Record<string, unknown>,
): Promise<SeededKey[]> {
  const keys = new Array<SeededKey>(count);
  await forEachConcurrently(
    count,
    limits.seedConcurrency,
    async (index) => {
      const response = await postJson(target.url, "/v1/keys.createKey", { apiId, ...bodyFor(index) }, target.rootKey);
      keys[index] = {
        keyId: stringField(response, "keyId", "keys.createKey"),
        key: stringField(response, "key", "keys.createKey"),
      };
    },
    (done) => target.log(`seeding ${what}: ${done}/${count} keys`),
  );
  return keys;
}

export async function setOverrides(
  target: SeedTarget,
  namespaceName: string,
  overrides: ReadonlyArray<{ identifier: string; limit: number; duration: number }>,
): Promise<void> {
  await forEachConcurrently(
    overrides.length,
    limits.seedConcurrency,
    async (index) => {
      const override = overrides[index];
      if (override === undefined) return;
      const response = await postJson(
        target.url,
        "/v1/ratelimits.setOverride",
        { namespaceName, ...override },
        target.rootKey,
      );
      stringField(response, "overrideId", "ratelimits.setOverride");
    },
    (done) => target.log(`seeding overrides: ${done}/${overrides.length}`),
  );
}

/** One ratelimits.limit call: creates the namespace on first use (the root key holds `*`). */
export async function touchNamespace(target: SeedTarget, namespace: string): Promise<void> {
  const response = await postJson(
    target.url,
    "/v1/ratelimits.limit",
    { namespace, identifier: "bench-seed", limit: 1, duration: 1000, cost: 0 },
    target.rootKey,
  );
  expectOk(response, "ratelimits.limit (creating the namespace)");
}

/** Runs task(0..count-1) with at most `concurrency` in flight; reports progress at most once a second. */
export async function forEachConcurrently(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<void>,
  progress: (done: number) => void,
): Promise<void> {
  let next = 0,
    done = 0,
    lastReportMs = Date.now();
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      await task(index);
      done++;
      if (Date.now() - lastReportMs >= 1000) {
        lastReportMs = Date.now();
        progress(done);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  progress(done);
}
