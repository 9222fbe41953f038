// The audit log: every admin write, newest first, with filters and "Load more" (cursor pages).
import { get } from "../api.js";
import { add, button, card, fill, field, form, formatTime, h, pageHeader, relativeTime, table } from "../ui.js";

const actions = [
  "api.create",
  "api.delete",
  "api.deleteKeys",
  "key.create",
  "key.update",
  "key.delete",
  "key.import",
  "key.updateRemaining",
  "key.setPermissions",
  "key.addPermissions",
  "key.removePermissions",
  "key.setRoles",
  "key.addRoles",
  "key.removeRoles",
  "permission.create",
  "permission.delete",
  "role.create",
  "role.delete",
  "identity.create",
  "identity.update",
  "identity.delete",
  "ratelimitNamespace.create",
  "ratelimitOverride.set",
  "ratelimitOverride.delete",
  "rootKey.create",
];

function changes(log) {
  const entries = Object.entries(log.changes);
  if (entries.length === 0) return h("span.muted", {}, "—");
  return h(
    "span.changes",
    {},
    entries.map(([name, value]) => h("span.change", {}, h("b", {}, name), " ", JSON.stringify(value))),
  );
}

export async function render(main) {
  const logs = [];
  let cursor;
  let filters = {};
  const list = h("div");
  const more = h("div.more");
  const draw = () => {
    list.replaceChildren(
      table(
        [
          { title: "Time", cell: (log) => h("span", { title: formatTime(log.time) }, relativeTime(log.time)) },
          { title: "Action", cell: (log) => h("span.action", {}, log.action) },
          { title: "Targets", cell: (log) => log.targetIds.map((id) => h("code.target", {}, id)) },
          {
            title: "Actor",
            cell: (log) => (log.actor.type === "system" ? h("span.muted", {}, "system") : h("code", {}, log.actor.id)),
          },
          { title: "Changes", cell: changes },
          { title: "Request", cell: (log) => h("code.muted", {}, log.requestId) },
        ],
        logs,
        { empty: "No entries match." },
      ),
    );
    fill(more, cursor === undefined ? null : button("Load more", loadMore));
  };
  const loadMore = async () => {
    const page = await get("/v1/audit.listLogs", { ...filters, limit: 50, cursor });
    logs.push(...page.logs);
    cursor = page.cursor;
    draw();
  };
  await loadMore();
  add(
    main,
    pageHeader("Audit log", "Who changed what, on every node alike: derived from the replicated log."),
    card(
      null,
      form(
        [
          field("Action", "action", { type: "select", options: [["", "All actions"], ...actions.map((a) => [a, a])] }),
          field("Target id", "targetId", { placeholder: "key_…" }),
          field("Actor (root key id)", "actorId", { placeholder: "key_…" }),
        ],
        "Filter",
        async (values) => {
          filters = Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ""));
          logs.length = 0;
          cursor = undefined;
          await loadMore();
        },
        { inline: true },
      ),
      list,
      more,
    ),
  );
}
