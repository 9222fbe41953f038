import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

// Tests import the workspace packages from source, so `vitest` needs no build step;
// tests that spawn real processes run the compiled output that `npm test` builds first.
export default defineConfig({
  resolve: {
    alias: {
      "@keyraft/core": src("core"),
      "@keyraft/raft": src("raft"),
      "@keyraft/gateway": src("gateway"),
    },
  },
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts", "bench/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
