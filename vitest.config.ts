import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string, entry = "index") =>
  fileURLToPath(new URL(`./packages/${pkg}/src/${entry}.ts`, import.meta.url));

// Tests import the workspace packages from source, so `vitest` needs no build step;
// tests that spawn real processes run the compiled output that `npm test` builds first.
export default defineConfig({
  resolve: {
    // Exact matches: a string key would also rewrite the subpath exports (@keyraft/raft/testing).
    alias: [
      { find: /^@keyraft\/core$/, replacement: src("core") },
      { find: /^@keyraft\/core\/sim-counters$/, replacement: src("core", "sim-counters/index") },
      { find: /^@keyraft\/raft$/, replacement: src("raft") },
      { find: /^@keyraft\/raft\/testing$/, replacement: src("raft", "testing") },
      { find: /^@keyraft\/gateway$/, replacement: src("gateway") },
    ],
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "bench/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
