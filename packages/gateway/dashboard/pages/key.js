// One key: its details, limits and credits, its verifications over the last 24 hours by outcome,
// and what may be changed: enable/disable, name, credits, rate limit, roles and permissions, delete.
import { get, post } from "../api.js";
import { verificationsChart } from "../chart.js";
import {
  add,
  badge,
  button,
  card,
  confirmAction,
  definitionList,
  field,
  form,
  formatTime,
  h,
  notice,
  pageHeader,
} from "../ui.js";

const hourMs = 3_600_000;

function limits(key) {
  const list = [];
  if (key.ratelimit) list.push(`${key.ratelimit.limit} per ${key.ratelimit.duration / 1000} s`);
  for (const limit of key.ratelimits ?? []) list.push(`${limit.name}: ${limit.limit} per ${limit.duration / 1000} s`);
  return list.length === 0 ? "none" : list.join(", ");
}

export async function render(main, [keyId]) {
  const key = await get("/v1/keys.getKey", { keyId });
  const toMs = Date.now();
  const fromMs = toMs - 24 * hourMs;
  const verifications = await get("/v1/analytics.getVerifications", {
    apiId: key.apiId,
    keyId,
    groupBy: "hour",
    start: fromMs,
    end: toMs,
  }).catch((error) => error);
  const status = h("div");
  const act = (label, action) =>
    button(label, async () => {
      status.replaceChildren();
      try {
        await action();
      } catch (error) {
        status.replaceChildren(notice(`${error.code ?? "ERROR"}: ${error.message}`, "error"));
      }
    });
  const reload = async () => {
    main.replaceChildren();
    await render(main, [keyId]);
  };
  const total = Array.isArray(verifications) ? verifications.reduce((sum, row) => sum + (row.total ?? 0), 0) : null;

  add(
    main,
    pageHeader(
      key.name ?? "(unnamed key)",
      h("span", {}, "Key ", h("code", {}, key.id), " of API ", h("a", { href: `#/apis/${key.apiId}` }, key.apiId)),
      key.enabled === false ? badge("disabled", "warn") : badge("enabled", "ok"),
    ),
    status,
    h(
      "div.grid",
      {},
      card(
        "Details",
        definitionList([
          ["Prefix", h("code", {}, `${key.start}…`)],
          ["Created", formatTime(key.createdAt)],
          ["Updated", key.updatedAt ? formatTime(key.updatedAt) : "—"],
          ["Expires", key.expires ? formatTime(key.expires) : "never"],
          ["Owner", key.identity?.externalId ?? key.ownerId ?? "—"],
          ["Roles", (key.roles ?? []).join(", ") || "none"],
          ["Permissions", (key.permissions ?? []).join(", ") || "none"],
        ]),
      ),
      card(
        "Limits and credits",
        definitionList([
          ["Credits", h("span.num", { dataset: { field: "remaining" } }, key.remaining ?? "unlimited")],
          ["Refill", key.refill ? `${key.refill.amount} ${key.refill.interval}` : "none"],
          ["Rate limits", limits(key)],
        ]),
      ),
    ),
    card(
      h(
        "span",
        {},
        "Verifications, last 24 hours ",
        h("span.count", { dataset: { field: "verifications" } }, total ?? ""),
      ),
      Array.isArray(verifications)
        ? verificationsChart(verifications, { fromMs, toMs, bucketMs: hourMs })
        : notice(`Analytics unavailable: ${verifications.message}`, "warn"),
    ),
    card(
      "Change",
      h(
        "div.button-row",
        {},
        key.enabled === false
          ? act("Enable key", async () => {
              await post("/v1/keys.updateKey", { keyId, enabled: true });
              await reload();
            })
          : act("Disable key", async () => {
              await post("/v1/keys.updateKey", { keyId, enabled: false });
              await reload();
            }),
        act("Delete key", async () => {
          if (!confirmAction(`Delete key ${keyId}? Verifications of it fail from now on.`)) return;
          await post("/v1/keys.deleteKey", { keyId });
          location.hash = `#/apis/${key.apiId}`;
        }),
      ),
      form(
        [
          field("Name", "name", { value: key.name ?? "" }),
          field("Credits (empty: unlimited)", "remaining", { type: "number", min: 0, value: key.remaining ?? "" }),
          field("Rate limit (requests)", "limit", { type: "number", min: 1, value: key.ratelimit?.limit ?? "" }),
          field("per (seconds)", "durationSeconds", {
            type: "number",
            min: 1,
            value: key.ratelimit ? key.ratelimit.duration / 1000 : "",
          }),
        ],
        "Save",
        async (values) => {
          const body = { keyId, name: values.name === "" ? null : values.name };
          body.remaining = values.remaining === "" ? null : Number(values.remaining);
          body.ratelimit =
            values.limit === ""
              ? null
              : { type: "fast", limit: Number(values.limit), duration: Number(values.durationSeconds || 60) * 1000 };
          await post("/v1/keys.updateKey", body);
          await reload();
        },
        { columns: true },
      ),
    ),
    await rbacCard(key, reload),
  );
}

async function rbacCard(key, reload) {
  const [permissions, roles] = await Promise.all([
    get("/v1/permissions.listPermissions").catch(() => []),
    get("/v1/permissions.listRoles").catch(() => []),
  ]);
  const options = (items, label) => [["", `Choose a ${label}…`], ...items.map((item) => [item.id, item.name])];
  return card(
    "Roles and permissions",
    h(
      "div.grid",
      {},
      form(
        [field("Permission", "permission", { type: "select", options: options(permissions, "permission") })],
        "Add permission",
        async (values) => {
          if (values.permission === "") return;
          await post("/v1/keys.addPermissions", { keyId: key.id, permissions: [{ id: values.permission }] });
          await reload();
        },
        { inline: true },
      ),
      form(
        [field("Role", "role", { type: "select", options: options(roles, "role") })],
        "Add role",
        async (values) => {
          if (values.role === "") return;
          await post("/v1/keys.addRoles", { keyId: key.id, roles: [{ id: values.role }] });
          await reload();
        },
        { inline: true },
      ),
    ),
    h(
      "div.chips",
      {},
      (key.permissions ?? []).map((slug) =>
        h(
          "span.chip",
          {},
          slug,
          button(
            "×",
            async () => {
              await post("/v1/keys.removePermissions", { keyId: key.id, permissions: [{ name: slug }] });
              await reload();
            },
            "chip-remove",
          ),
        ),
      ),
      (key.roles ?? []).map((name) =>
        h(
          "span.chip.role",
          {},
          name,
          button(
            "×",
            async () => {
              await post("/v1/keys.removeRoles", { keyId: key.id, roles: [{ name }] });
              await reload();
            },
            "chip-remove",
          ),
        ),
      ),
    ),
  );
}
