// The dashboard's files: its own (packages/gateway/dashboard/, plain ES modules and CSS, served
// as written) and uPlot's build from its npm package. Read once when the plugin is registered;
// only names on this list are ever served, so no request path reaches the file system.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert } from "@keyraft/core";

export interface Asset {
  body: Buffer;
  contentType: string;
}

/** The dashboard's own files: beside src/ and dist/, so the same relative path works from both. */
export const dashboardDir = fileURLToPath(new URL("../../dashboard/", import.meta.url));
/** Files served at most (a bound on what is read into memory at start). */
export const dashboardAssetsMax = 64;

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

function asset(path: string): Asset {
  const contentType = contentTypes[extname(path)];
  assert(contentType !== undefined, `dashboard asset of a known type: ${path}`);
  return { body: readFileSync(path), contentType };
}

/** name -> file, for `/dashboard/assets/<name>` (nested modules as `pages/x.js`). */
export function loadDashboardAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (dir: string, prefix: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name), `${prefix}${entry.name}/`);
      else if (entry.name !== "index.html" && extname(entry.name) in contentTypes)
        assets.set(`${prefix}${entry.name}`, asset(join(dir, entry.name)));
    }
  };
  walk(dashboardDir, "");
  const require = createRequire(import.meta.url);
  assets.set("vendor/uPlot.iife.min.js", asset(require.resolve("uplot/dist/uPlot.iife.min.js")));
  assets.set("vendor/uPlot.min.css", asset(require.resolve("uplot/dist/uPlot.min.css")));
  assert(assets.size <= dashboardAssetsMax, "dashboard assets within dashboardAssetsMax");
  return assets;
}

export function loadDashboardPage(): Asset {
  return asset(join(dashboardDir, "index.html"));
}
