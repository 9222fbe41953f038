// Identities: list (100 per page), create, and delete; their rate limits are shared by their keys.
import { get, post } from "../api.js";
import { add, button, card, fill, confirmAction, field, form, h, pageHeader, table } from "../ui.js";

export async function render(main) {
  const identities = [];
  let cursor;
  const list = h("div");
  const more = h("div.more");
  const draw = () => {
    list.replaceChildren(
      table(
        [
          { title: "External id", cell: (identity) => h("strong", {}, identity.externalId) },
          { title: "Identity id", cell: (identity) => h("code", {}, identity.id) },
          {
            title: "Rate limits",
            cell: (identity) =>
              identity.ratelimits
                .map((limit) => `${limit.name}: ${limit.limit}/${limit.duration / 1000}s`)
                .join(", ") || "none",
          },
          {
            title: "",
            cell: (identity) =>
              button(
                "Delete",
                async () => {
                  if (!confirmAction(`Delete identity ${identity.externalId}?`)) return;
                  await post("/v1/identities.deleteIdentity", { identityId: identity.id });
                  await reload();
                },
                "danger-link",
              ),
          },
        ],
        identities,
        { empty: "No identities yet." },
      ),
    );
    fill(more, cursor === undefined ? null : button("Load more", loadMore));
  };
  const loadMore = async () => {
    const page = await get("/v1/identities.listIdentities", { limit: 100, cursor });
    identities.push(...page.identities);
    cursor = page.identities.length < 100 ? undefined : page.cursor;
    draw();
  };
  const reload = async () => {
    identities.length = 0;
    cursor = undefined;
    await loadMore();
  };
  await loadMore();
  add(
    main,
    pageHeader("Identities", "An identity groups keys of one user or tenant; its rate limits apply to all of them."),
    card(null, list, more),
    card(
      "Create an identity",
      form(
        [
          field("External id", "externalId", { required: true, minlength: 3, placeholder: "user_123" }),
          field("Rate limit name", "limitName", { placeholder: "requests" }),
          field("Limit", "limit", { type: "number", min: 1 }),
          field("per (seconds)", "durationSeconds", { type: "number", min: 1 }),
        ],
        "Create identity",
        async (values, element) => {
          const body = { externalId: values.externalId };
          if (values.limitName && values.limit)
            body.ratelimits = [
              {
                name: values.limitName,
                limit: Number(values.limit),
                duration: Number(values.durationSeconds || 60) * 1000,
              },
            ];
          await post("/v1/identities.createIdentity", body);
          element.reset();
          await reload();
        },
        { inline: true },
      ),
    ),
  );
}
