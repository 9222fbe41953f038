// Rate limits: the namespaces of ratelimits.limit and their overrides (set, list, delete).
import { get, post } from "../api.js";
import { add, button, card, confirmAction, field, form, h, pageHeader, table } from "../ui.js";

export async function render(main) {
  const { namespaces } = await get("/v1/ratelimits.listNamespaces");
  const sections = await Promise.all(
    namespaces.map(async (namespace) => {
      const { overrides } = await get("/v1/ratelimits.listOverrides", { namespaceId: namespace.id, limit: 100 });
      return { namespace, overrides };
    }),
  );
  const rerender = async () => {
    main.replaceChildren();
    await render(main);
  };
  add(
    main,
    pageHeader("Rate limits", "Namespaces of ratelimits.limit and their overrides (exact identifiers or wildcards)."),
    sections.length === 0
      ? card(null, h("div.empty", {}, "No namespace yet: the first ratelimits.limit call creates one."))
      : null,
    sections.map(({ namespace, overrides }) =>
      card(
        h("span", {}, namespace.name, " ", h("code.muted", {}, namespace.id)),
        table(
          [
            { title: "Identifier", cell: (override) => h("code", {}, override.identifier) },
            { title: "Limit", cell: (override) => `${override.limit} per ${override.duration / 1000} s` },
            { title: "Async", cell: (override) => (override.async ? "yes" : "no") },
            {
              title: "",
              cell: (override) =>
                button(
                  "Delete",
                  async () => {
                    if (!confirmAction(`Delete the override of ${override.identifier}?`)) return;
                    await post("/v1/ratelimits.deleteOverride", {
                      namespaceId: namespace.id,
                      identifier: override.identifier,
                    });
                    await rerender();
                  },
                  "danger-link",
                ),
            },
          ],
          overrides,
          { empty: "No overrides: every identifier gets the limit its caller asks for." },
        ),
        form(
          [
            field("Identifier (* wildcards)", "identifier", { required: true, placeholder: "customer_*" }),
            field("Limit", "limit", { type: "number", min: 0, required: true }),
            field("per (seconds)", "durationSeconds", { type: "number", min: 1, required: true, value: 60 }),
          ],
          "Set override",
          async (values) => {
            await post("/v1/ratelimits.setOverride", {
              namespaceId: namespace.id,
              identifier: values.identifier,
              limit: Number(values.limit),
              duration: Number(values.durationSeconds) * 1000,
            });
            await rerender();
          },
          { inline: true },
        ),
      ),
    ),
  );
}
