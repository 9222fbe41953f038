// One API: its keys (search within the loaded pages, 50 per page with "Load more") and a form
// to create a key, whose secret is shown once.
import { get, post } from "../api.js";
import {
  add,
  badge,
  button,
  card,
  fill,
  copyable,
  field,
  form,
  formatTime,
  h,
  notice,
  pageHeader,
  table,
} from "../ui.js";

const pageSize = 50;

export async function render(main, [apiId]) {
  const api = await get("/v1/apis.getApi", { apiId });
  const keys = [];
  let cursor;
  let total = 0;
  const list = h("div");
  const more = h("div.more");
  const search = h("input.search", {
    type: "search",
    placeholder: "Search by name, id, prefix or owner",
    "aria-label": "Search keys",
  });
  const created = h("div");

  const matches = (key, text) =>
    [key.id, key.name, key.start, key.ownerId, key.identity?.externalId].some((value) =>
      (value ?? "").toLowerCase().includes(text),
    );
  const draw = () => {
    const text = search.value.trim().toLowerCase();
    const shown = text === "" ? keys : keys.filter((key) => matches(key, text));
    list.replaceChildren(
      table(
        [
          { title: "Name", cell: (key) => h("a.strong", { href: `#/keys/${key.id}` }, key.name ?? "(unnamed)") },
          { title: "Key id", cell: (key) => h("code", {}, key.id) },
          { title: "Prefix", cell: (key) => h("code", {}, `${key.start}…`) },
          {
            title: "Status",
            cell: (key) => (key.enabled === false ? badge("disabled", "warn") : badge("enabled", "ok")),
          },
          { title: "Credits", cell: (key) => (key.remaining === undefined ? "unlimited" : key.remaining) },
          { title: "Created", cell: (key) => formatTime(key.createdAt) },
        ],
        shown,
        {
          empty: text === "" ? "No keys yet." : "No loaded key matches.",
          onRow: (key) => (location.hash = `#/keys/${key.id}`),
        },
      ),
    );
    fill(
      more,
      h("span.muted", {}, `${keys.length} of ${total} keys loaded`),
      cursor === undefined ? null : button("Load more", loadMore),
    );
  };
  const loadMore = async () => {
    const page = await get("/v1/apis.listKeys", { apiId, limit: pageSize, cursor });
    keys.push(...page.keys);
    total = page.total;
    cursor = page.keys.length < pageSize ? undefined : page.cursor;
    draw();
  };
  search.addEventListener("input", draw);
  await loadMore();

  const createForm = form(
    [
      field("Name", "name", { placeholder: "customer key" }),
      field("Prefix", "prefix", { placeholder: "sk", maxlength: 8 }),
      field("External id (identity)", "externalId", { placeholder: "user_123" }),
      field("Credits", "remaining", { type: "number", min: 0, placeholder: "unlimited" }),
      field("Rate limit (requests)", "limit", { type: "number", min: 1, placeholder: "none" }),
      field("per (seconds)", "durationSeconds", { type: "number", min: 1, placeholder: "60" }),
    ],
    "Create key",
    async (values, element) => {
      const body = { apiId };
      if (values.name) body.name = values.name;
      if (values.prefix) body.prefix = values.prefix;
      if (values.externalId) body.externalId = values.externalId;
      if (values.remaining !== "") body.remaining = Number(values.remaining);
      if (values.limit !== "")
        body.ratelimit = {
          type: "fast",
          limit: Number(values.limit),
          duration: Number(values.durationSeconds || 60) * 1000,
        };
      const answer = await post("/v1/keys.createKey", body);
      element.reset();
      created.replaceChildren(
        h(
          "div.secret-once",
          { role: "status" },
          h("strong", {}, "New key — copy it now, it is shown only once:"),
          copyable(answer.key),
          h("div.muted", {}, "Key id ", h("a", { href: `#/keys/${answer.keyId}` }, answer.keyId)),
        ),
      );
      keys.length = 0;
      cursor = undefined;
      await loadMore();
    },
    { columns: true },
  );

  add(
    main,
    pageHeader(api.name, h("span", {}, "API ", h("code", {}, api.id))),
    created,
    card("Keys", h("div.toolbar", {}, search), list, more),
    card(
      "Create a key",
      createForm,
      notice("The key's secret is never stored: only its hash is. Copy it when it appears.", "info"),
    ),
  );
}
