// Small DOM helpers: build elements, tables, forms, notices and dialogs without a framework.

/** h("div.card", {onclick}, child, ...): element with optional classes, attributes and children. */
export function h(spec, attributes = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const element = document.createElement(tag || "div");
  if (classes.length > 0) element.className = classes.join(" ");
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** Replaces the children of `element`, leaving out null/undefined/false ones. */
export function fill(element, ...children) {
  element.replaceChildren(
    ...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false),
  );
  return element;
}

/** Appends children to `element`, flattening arrays and leaving out null/undefined/false ones. */
export function add(element, ...children) {
  element.append(
    ...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false),
  );
  return element;
}

export function formatTime(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function relativeTime(ms) {
  const seconds = Math.round((Date.now() - ms) / 1000);
  if (Math.abs(seconds) < 60) return `${seconds}s ago`;
  const minutes = Math.round(seconds / 60);
  if (Math.abs(minutes) < 60) return `${minutes}m ago`;
  const hours = Math.round(minutes / 60);
  if (Math.abs(hours) < 48) return `${hours}h ago`;
  return `${Math.round(hours / 24)}d ago`;
}

export function pageHeader(title, subtitle, ...actions) {
  return h(
    "header.page-header",
    {},
    h("div", {}, h("h1", {}, title), subtitle ? h("p.subtitle", {}, subtitle) : null),
    h("div.actions", {}, actions),
  );
}

export function badge(text, tone = "neutral") {
  return h(`span.badge.${tone}`, {}, text);
}

export function table(columns, rows, { empty = "Nothing here yet.", onRow } = {}) {
  if (rows.length === 0) return h("div.empty", {}, empty);
  return h(
    "table.table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((column) => h("th", {}, column.title)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          onRow ? "tr.clickable" : "tr",
          { onclick: onRow ? () => onRow(row) : undefined },
          columns.map((column) => h("td", {}, column.cell(row))),
        ),
      ),
    ),
  );
}

export function card(title, ...children) {
  return h("section.card", {}, title ? h("h2", {}, title) : null, children);
}

/** A labelled input; `name` becomes the form field. */
export function field(label, name, attributes = {}) {
  const input =
    attributes.type === "select"
      ? h(
          "select",
          { name, id: `f-${name}` },
          (attributes.options ?? []).map(([value, text]) => h("option", { value }, text)),
        )
      : h("input", { name, id: `f-${name}`, autocomplete: "off", ...attributes });
  return h("label.field", { for: `f-${name}` }, h("span", {}, label), input);
}

/** A form whose submit calls `onSubmit(values)`; errors appear inside it. */
export function form(fields, submitText, onSubmit, { inline = false, columns = false } = {}) {
  const status = h("div.form-status");
  const button = h("button.primary", { type: "submit" }, submitText);
  const kind = inline ? "form.form.inline" : columns ? "form.form.columns" : "form.form";
  const element = h(kind, {}, fields, h("div.form-actions", {}, button), status);
  element.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.replaceChildren();
    button.disabled = true;
    try {
      await onSubmit(Object.fromEntries(new FormData(element).entries()), element);
    } catch (error) {
      status.replaceChildren(errorNotice(error));
    } finally {
      button.disabled = false;
    }
  });
  return element;
}

export function errorNotice(error) {
  const code = error.code ? `${error.code}: ` : "";
  return h("div.notice.error", { role: "alert" }, `${code}${error.message}`);
}

export function notice(text, tone = "info") {
  return h(`div.notice.${tone}`, { role: "status" }, text);
}

export function button(text, onclick, tone = "") {
  return h(`button${tone ? `.${tone}` : ""}`, { type: "button", onclick }, text);
}

/** Asks before a destructive action. */
export function confirmAction(message) {
  return window.confirm(message);
}

export function definitionList(entries) {
  return h(
    "dl.details",
    {},
    entries.filter(Boolean).map(([term, value]) => [h("dt", {}, term), h("dd", {}, value ?? "—")]),
  );
}

export function copyable(text) {
  const code = h("code.copyable", {}, text);
  const copy = button("Copy", async () => {
    await navigator.clipboard?.writeText(text).catch(() => undefined);
    copy.textContent = "Copied";
  });
  return h("span.copy-row", {}, code, copy);
}
