// The dashboard in a real headless Chromium (playwright-core; Chromium from Debian's package,
// installed by chromium.ts when missing), against a real node process: sign in with the root key,
// create an API and a key, verify the key through the API and see the count move, disable it, and
// find the audit entry; the cluster page refreshes itself. Every page is screenshot into
// test-artifacts/dashboard/ (UPDATE_SCREENSHOTS=1 also rewrites docs/img/dashboard.png).
import { copyFileSync, mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { killAll, repoRoot, startNode, type NodeProcess } from "../e2e/node-process.js";
import { ensureChromium } from "./chromium.js";

const rootKey = "dashboard_root_key_0123456789abcdef";
const artifactDir = join(repoRoot, "test-artifacts", "dashboard");
const readmeScreenshot = join(repoRoot, "docs", "img", "dashboard.png");

let node: NodeProcess;
let dataDir = "";
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const executablePath = ensureChromium((line) => process.stderr.write(`browser test: ${line}\n`));
  mkdirSync(artifactDir, { recursive: true });
  dataDir = await mkdtemp(join(tmpdir(), "keyraft-dashboard-"));
  node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey });
  // --no-sandbox: the test runs as root on CI, where Chromium's sandbox refuses to start.
  browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  page = await browser.newPage({ viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1 });
  page.on("pageerror", (error) => process.stderr.write(`page error: ${error.message}\n`));
}, 15 * 60_000);

afterAll(async () => {
  await browser?.close();
  killAll();
  if (dataDir !== "") await rm(dataDir, { recursive: true, force: true });
});

// A failed step leaves a picture of where it stood.
afterEach(async (context) => {
  if (context.task.result?.state === "fail" && page !== undefined)
    await screenshot(`failed-${context.task.name.replace(/\W+/g, "-")}`).catch(() => undefined);
});

async function screenshot(name: string): Promise<string> {
  const path = join(artifactDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

async function api(path: string, body: unknown, key: string | null = rootKey): Promise<any> {
  const response = await fetch(`${node.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body),
  });
  return response.json();
}

describe("the dashboard", () => {
  let keyId = "";
  let secret = "";

  it("signs in with a root key, refusing a wrong one", async () => {
    await page.goto(`${node.baseUrl}/dashboard`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await screenshot("01-sign-in");
    await page.fill("#root-key", "not_a_root_key_at_all");
    await page.click("button[type=submit]");
    await page.getByRole("alert").waitFor();
    expect(await page.getByRole("alert").textContent()).toContain("not a valid root key");
    await page.fill("#root-key", rootKey);
    await page.click("button[type=submit]");
    await page.getByRole("heading", { name: "APIs" }).waitFor();
    // The key is kept for this tab only: never in the URL, a cookie or localStorage.
    expect(page.url()).not.toContain(rootKey);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await page.evaluate(() => document.cookie)).toBe("");
  });

  it("creates an API and a key, whose secret is shown once", async () => {
    await page.fill("#f-name", "payments");
    await page.getByRole("button", { name: "Create API" }).click();
    await page.getByRole("heading", { name: "payments" }).waitFor();
    await page.fill("#f-name", "checkout service");
    await page.fill("#f-remaining", "1000");
    await page.getByRole("button", { name: "Create key" }).click();
    const shown = page.locator(".secret-once .copyable");
    await shown.waitFor();
    secret = (await shown.textContent()) ?? "";
    keyId = (await page.locator(".secret-once a").textContent()) ?? "";
    expect(secret.length).toBeGreaterThan(16);
    expect(keyId).toMatch(/^key_/);
    await page.locator("td", { hasText: "checkout service" }).waitFor();
    await screenshot("02-api-keys");
    // Shown once: the key's own page never shows the secret.
    await page.goto(`${node.baseUrl}/dashboard#/keys/${keyId}`);
    await page.getByRole("heading", { name: "checkout service" }).waitFor();
    expect(await page.content()).not.toContain(secret);
  });

  it("shows the key's verifications move after it is verified through the API", async () => {
    for (let i = 0; i < 3; i++) expect((await api("/v1/keys.verifyKey", { key: secret }, null)).valid).toBe(true);
    const count = page.locator("[data-field=verifications]");
    const deadline = Date.now() + 15_000;
    // Analytics are flushed every second: reload the page until the count shows all three.
    while (Date.now() < deadline) {
      await page.reload();
      await page.getByRole("heading", { name: "checkout service" }).waitFor();
      if ((await count.textContent()) === "3") break;
      await page.waitForTimeout(300);
    }
    expect(await count.textContent()).toBe("3");
    // Credits are spent from this node's lease (docs/counters.md): the shown balance is at most 997.
    expect(Number(await page.locator("[data-field=remaining]").textContent())).toBeLessThanOrEqual(1000);
    await page.locator(".chart canvas").first().waitFor();
    await screenshot("03-key");
  });

  it("disables the key; verifications then fail, and the audit log has the entry", async () => {
    await page.getByRole("button", { name: "Disable key" }).click();
    await page.getByRole("button", { name: "Enable key" }).waitFor();
    expect((await api("/v1/keys.verifyKey", { key: secret }, null)).code).toBe("DISABLED");
    await page.click("a[data-nav=audit]");
    await page.getByRole("heading", { name: "Audit log" }).waitFor();
    const row = page.locator("tr", { hasText: "key.update" }).filter({ hasText: keyId });
    await row.waitFor();
    expect(await row.textContent()).toContain("enabled");
    await page.locator("tr", { hasText: "key.create" }).filter({ hasText: keyId }).waitFor();
    await screenshot("04-audit");
  });

  it("shows the cluster and refreshes it by itself", async () => {
    await page.click("a[data-nav=cluster]");
    await page.getByRole("heading", { name: "Cluster" }).waitFor();
    await page.locator(".stat-value", { hasText: "leader" }).first().waitFor();
    const updated = page.locator(".page-header .muted");
    const first = await updated.textContent();
    await page.waitForFunction(
      (before) => document.querySelector(".page-header .muted")?.textContent !== before,
      first,
      { timeout: 10_000 },
    );
    await screenshot("05-cluster");
  });

  it("manages identities, roles and permissions, and overrides", async () => {
    await page.click("a[data-nav=identities]");
    await page.getByRole("heading", { name: "Identities" }).waitFor();
    await page.fill("#f-externalId", "customer_42");
    await page.getByRole("button", { name: "Create identity" }).click();
    await page.locator("td", { hasText: "customer_42" }).waitFor();
    await screenshot("06-identities");

    await page.click("a[data-nav=rbac]");
    await page.getByRole("heading", { name: "Roles & permissions" }).waitFor();
    await page.locator("form", { hasText: "New permission" }).locator("input").fill("invoices.read");
    await page.locator("form", { hasText: "New permission" }).getByRole("button", { name: "Create" }).click();
    await page.locator("td", { hasText: "invoices.read" }).waitFor();
    await screenshot("07-rbac");

    expect(
      (await api("/v1/ratelimits.limit", { namespace: "email", identifier: "u1", limit: 5, duration: 60_000 })).success,
    ).toBe(true);
    await page.click("a[data-nav=ratelimits]");
    await page.getByRole("heading", { name: "Rate limits" }).waitFor();
    await page.fill("#f-identifier", "vip_*");
    await page.fill("#f-limit", "500");
    await page.getByRole("button", { name: "Set override" }).click();
    await page.locator("td", { hasText: "vip_*" }).waitFor();
    await screenshot("08-ratelimits");

    // The README's picture: the key page with its chart.
    await page.goto(`${node.baseUrl}/dashboard#/keys/${keyId}`);
    await page.locator(".chart canvas").first().waitFor();
    const keyShot = await screenshot("09-key-disabled");
    if (process.env["UPDATE_SCREENSHOTS"] === "1") copyFileSync(keyShot, readmeScreenshot);
  });

  it("shows a limited root key only what it may see", async () => {
    const other = await api("/v1/apis.createApi", { name: "internal" });
    const visible = (await api("/v1/apis.createApi", { name: "partner" })).apiId as string;
    const limited = await api("/v1/keys.createKey", {
      apiId: "api_root",
      name: "partner admin",
      permissions: [`api.${visible}.read_api`, `api.${visible}.read_key`],
    });
    expect(limited.key).toBeDefined();
    await page.click("button.signout");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.fill("#root-key", limited.key);
    await page.click("button[type=submit]");
    await page.getByRole("heading", { name: "APIs" }).waitFor();
    await page.locator("td", { hasText: "partner" }).waitFor();
    expect(await page.locator("td", { hasText: "internal" }).count()).toBe(0);
    expect(await page.locator("td", { hasText: other.apiId }).count()).toBe(0);
    await page.click("a[data-nav=audit]");
    await page.getByRole("alert").waitFor();
    expect(await page.getByRole("alert").textContent()).toContain("INSUFFICIENT_PERMISSIONS");
    await screenshot("10-limited-key");
  });
});
