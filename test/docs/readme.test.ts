// The documentation keeps its promises: the README's table of contents is exactly its sections,
// every relative link of the README and docs/ reaches a file and a heading that exist, and the
// README's configuration lists every environment variable the node reads (and only real ones).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { headingsOf, linksOf, proseLines } from "./markdown.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const readmePath = join(root, "README.md");
const readme = readFileSync(readmePath, "utf8");

function filesUnder(dir: string, accept: (path: string) => boolean): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...filesUnder(path, accept));
    else if (accept(path)) found.push(path);
  }
  return found;
}

/** The README's table of contents: the `- [text](#anchor)` list before its first `##` heading. */
function tableOfContents(): { text: string; anchor: string }[] {
  const lines = proseLines(readme);
  const end = lines.findIndex((line) => line.startsWith("## "));
  return lines
    .slice(0, end)
    .map((line) => /^- \[([^\]]+)\]\(#([^)]+)\)$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({ text: match[1] ?? "", anchor: match[2] ?? "" }));
}

describe("README table of contents", () => {
  const headings = headingsOf(readme);
  const sections = headings.filter((heading) => heading.level === 2);
  const contents = tableOfContents();

  it("lists every ## section, in order, under the section's own title", () => {
    expect(sections.length).toBeGreaterThan(0);
    expect(contents.map((entry) => entry.text)).toEqual(sections.map((section) => section.text));
    expect(contents.map((entry) => entry.anchor)).toEqual(sections.map((section) => section.anchor));
  });

  it("links only to headings of the README", () => {
    const anchors = new Set(headings.map((heading) => heading.anchor));
    const broken = contents.filter((entry) => !anchors.has(entry.anchor)).map((entry) => `#${entry.anchor}`);
    expect(broken).toEqual([]);
  });
});

describe("links of the README and docs/", () => {
  const documents = [readmePath, ...filesUnder(join(root, "docs"), (path) => path.endsWith(".md"))];

  it("every relative link reaches an existing file, and every anchor a heading of its target", () => {
    const broken: string[] = [];
    for (const document of documents) {
      for (const link of linksOf(readFileSync(document, "utf8"))) {
        if (/^[a-z]+:/i.test(link.target)) continue; // http:, https:, mailto:
        const [pathPart = "", anchor] = link.target.split("#");
        const target = pathPart === "" ? document : resolve(dirname(document), pathPart);
        const where = `${relative(root, document)}:${link.line} (${link.target})`;
        if (!existsSync(target)) {
          broken.push(`${where}: no file ${relative(root, target)}`);
          continue;
        }
        if (anchor === undefined || !target.endsWith(".md")) continue;
        const anchors = headingsOf(readFileSync(target, "utf8")).map((heading) => heading.anchor);
        if (!anchors.includes(anchor)) broken.push(`${where}: no heading #${anchor} in ${relative(root, target)}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("README configuration", () => {
  const variablePattern = /^(?:PORT|HOST|KEYRAFT_[A-Z0-9_]+)$/;
  const sectionStart = readme.indexOf("\n## Configuration\n");
  const sectionEnd = readme.indexOf("\n## ", sectionStart + 1);
  const section = readme.slice(sectionStart, sectionEnd);
  /** Variables named in the first column of the section's tables. */
  const documented = [...section.matchAll(/^\| ((?:`[A-Z0-9_]+`(?:, )?)+) \|/gm)].flatMap((match) =>
    [...(match[1] ?? "").matchAll(/`([A-Z0-9_]+)`/g)].map((name) => name[1] ?? ""),
  );

  /**
   * Names the node's configuration reads: in the gateway's modules that mention `env`, every
   * quoted name or object key of the variable form, less the error codes (`errors.ts` files).
   */
  function variablesReadByTheNode(): Set<string> {
    const sources = filesUnder(join(root, "packages/gateway/src"), (path) => path.endsWith(".ts"));
    const namesIn = (text: string, pattern: RegExp): string[] =>
      [...text.matchAll(pattern)]
        .map((match) => match[1] ?? match[2] ?? "")
        .filter((name) => variablePattern.test(name));
    const errorCodes = new Set(
      sources
        .filter((path) => path.endsWith("errors.ts"))
        .flatMap((path) => namesIn(readFileSync(path, "utf8"), /"([A-Z][A-Z0-9_]*)"()/g)),
    );
    const names = new Set<string>();
    for (const source of sources) {
      const text = readFileSync(source, "utf8");
      if (!/\benv\b/.test(text)) continue;
      for (const name of namesIn(text, /"([A-Z][A-Z0-9_]*)"|\b([A-Z][A-Z0-9_]*)\s*:/g)) {
        if (!errorCodes.has(name)) names.add(name);
      }
    }
    return names;
  }

  it("documents every environment variable the node reads", () => {
    const read = variablesReadByTheNode();
    // The scan must find the configuration: a known variable from each of its modules.
    for (const known of ["PORT", "KEYRAFT_PEERS", "KEYRAFT_CREDIT_LEASE_TTL_MS", "KEYRAFT_RATELIMIT_RECONCILE_MS"]) {
      expect(read.has(known), `${known} read by the node`).toBe(true);
    }
    const missing = [...read].filter((name) => !documented.includes(name)).sort();
    expect(missing).toEqual([]);
  });

  it("documents no variable that nothing reads", () => {
    expect(documented.length).toBeGreaterThan(0);
    const sources = [
      ...filesUnder(join(root, "packages"), (path) => /\.(ts|mjs)$/.test(path)),
      ...filesUnder(join(root, "bench/src"), (path) => path.endsWith(".ts")),
      ...filesUnder(join(root, "cluster"), (path) => /\.(ts|mjs)$/.test(path)),
      ...filesUnder(join(root, "test"), (path) => path.endsWith(".ts") && !path.includes(`${join("test", "docs")}`)),
    ].map((path) => readFileSync(path, "utf8"));
    const unread = documented.filter((name) => !sources.some((text) => text.includes(name)));
    expect(unread).toEqual([]);
  });
});

describe("README and docs/ name only what exists", () => {
  it("every `npm run <script>` is a script of package.json", () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts,
    );
    const documents = [readmePath, ...filesUnder(join(root, "docs"), (path) => path.endsWith(".md"))];
    const named = documents.flatMap((document) =>
      [...readFileSync(document, "utf8").matchAll(/npm run ([a-z][a-z:-]*)/g)].map(
        (match) => `${relative(root, document)}: ${match[1] ?? ""}`,
      ),
    );
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((entry) => !scripts.includes(entry.split(": ")[1] ?? ""))).toEqual([]);
  });

  it("every route of the README's v2 table is a route of the gateway", () => {
    const start = readme.indexOf("| group | v2 routes | v1 routes | status |");
    expect(start).toBeGreaterThan(0);
    const rows = readme.slice(start).split("\n\n")[0]?.split("\n").slice(2) ?? [];
    const paths = rows.flatMap((row) => {
      const endpoints = row.split(" | ")[1] ?? "";
      return [...endpoints.replace(/\([^)]*\)/g, "").matchAll(/`([^`]+)`/g)].map((match) => {
        const name = match[1] ?? "";
        const method = /^(?:GET|POST) (\S+)$/.exec(name);
        return method !== null ? (method[1] ?? "") : `/v2/${name}`;
      });
    });
    expect(paths.length).toBeGreaterThan(10);
    const sources = filesUnder(join(root, "packages/gateway/src/v2"), (path) => path.endsWith(".ts"))
      .map((path) => readFileSync(path, "utf8"))
      .join("\n");
    // v2 routes are declared under the plugin's "/v2" prefix.
    expect(paths.filter((path) => !sources.includes(`"${path.replace(/^\/v2(?=\/)/, "")}"`))).toEqual([]);
  });

  it("every endpoint of the README's API table is a route of the gateway", () => {
    const start = readme.indexOf("| group | endpoints | status |");
    expect(start).toBeGreaterThan(0);
    const rows = readme.slice(start).split("\n\n")[0]?.split("\n").slice(2) ?? [];
    const paths = rows.flatMap((row) => {
      const [group = "", endpoints = ""] = row.split(" | ").map((cell) => cell.replace(/^\| /, ""));
      // Code spans in parentheses are remarks (`ownerId` filters, `api_root`), not endpoints.
      return [...endpoints.replace(/\([^)]*\)/g, "").matchAll(/`([^`]+)`/g)].map((match) => {
        const name = match[1] ?? "";
        const method = /^(?:GET|POST) (\S+)$/.exec(name);
        if (method !== null) return (method[1] ?? "").replace(/\{(\w+)\}/g, ":$1");
        return name.includes(".") ? `/v1/${name}` : `/v1/${group}.${name}`;
      });
    });
    expect(paths.length).toBeGreaterThan(40);
    const sources = filesUnder(join(root, "packages/gateway/src"), (path) => path.endsWith(".ts"))
      .map((path) => readFileSync(path, "utf8"))
      .join("\n");
    // A route may be declared whole or under a plugin's "/v1" prefix.
    const declared = (path: string): boolean =>
      sources.includes(`"${path}"`) || sources.includes(`"${path.replace(/^\/v1(?=\/)/, "")}"`);
    expect(paths.filter((path) => !declared(path))).toEqual([]);
  });
});
