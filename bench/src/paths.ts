import { fileURLToPath } from "node:url";

// This file is bench/src/paths.ts (tests) or bench/dist/paths.js (runs): the repository root is two up.
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
/** Compiled harness files (child-process entry points live here). */
export const benchDist = fileURLToPath(new URL("../dist/", import.meta.url));
export const defaultNodeEntry = "packages/gateway/dist/main.js";
