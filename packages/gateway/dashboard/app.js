// The dashboard: sign-in, the layout and a hash router (#/apis, #/keys/<id>, ...). Pages are
// modules in pages/ that render into the main area and may return a cleanup function.
import { ApiError, get, signIn, signOut, signedIn } from "./api.js";
import { errorNotice, h } from "./ui.js";
import * as apis from "./pages/apis.js";
import * as api from "./pages/api.js";
import * as key from "./pages/key.js";
import * as identities from "./pages/identities.js";
import * as rbac from "./pages/rbac.js";
import * as ratelimits from "./pages/ratelimits.js";
import * as audit from "./pages/audit.js";
import * as cluster from "./pages/cluster.js";

const routes = [
  { pattern: /^\/apis$/, page: apis, nav: "apis" },
  { pattern: /^\/apis\/([\w-]+)$/, page: api, nav: "apis" },
  { pattern: /^\/keys\/([\w-]+)$/, page: key, nav: "apis" },
  { pattern: /^\/identities$/, page: identities, nav: "identities" },
  { pattern: /^\/rbac$/, page: rbac, nav: "rbac" },
  { pattern: /^\/ratelimits$/, page: ratelimits, nav: "ratelimits" },
  { pattern: /^\/audit$/, page: audit, nav: "audit" },
  { pattern: /^\/cluster$/, page: cluster, nav: "cluster" },
];

const navItems = [
  ["apis", "APIs & keys", "#/apis"],
  ["identities", "Identities", "#/identities"],
  ["rbac", "Roles & permissions", "#/rbac"],
  ["ratelimits", "Rate limits", "#/ratelimits"],
  ["audit", "Audit log", "#/audit"],
  ["cluster", "Cluster", "#/cluster"],
];

const root = document.getElementById("app");
let cleanup = null;

function logo() {
  return h("div.brand", {}, h("img", { src: "/dashboard/assets/logo.svg", alt: "" }), h("span", {}, "keyraft"));
}

function renderSignIn(message) {
  const input = h("input", {
    type: "password",
    name: "rootKey",
    id: "root-key",
    placeholder: "Root key",
    autocomplete: "off",
    required: true,
  });
  const status = h("div.form-status", {}, message ? errorNotice(message) : null);
  const submit = h("button.primary.wide", { type: "submit" }, "Sign in");
  const signInForm = h(
    "form.signin-card",
    {},
    logo(),
    h("h1", {}, "Sign in"),
    h("p.subtitle", {}, "Use a root key of this cluster. It stays in this browser tab only."),
    h("label.field", { for: "root-key" }, h("span", {}, "Root key"), input),
    submit,
    status,
  );
  signInForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    signIn(input.value.trim());
    try {
      await get("/v1/apis.listApis");
      if (location.hash === "" || location.hash === "#/") location.hash = "#/apis";
      route();
    } catch (error) {
      signOut();
      status.replaceChildren(errorNotice(error.status === 403 ? { message: "This is not a valid root key." } : error));
      submit.disabled = false;
    }
  });
  root.replaceChildren(h("main.signin", {}, signInForm));
  input.focus();
}

function layout(active) {
  const main = h("main.content", { id: "content" });
  const nav = h(
    "nav.sidebar",
    {},
    logo(),
    h(
      "ul",
      {},
      navItems.map(([id, text, href]) =>
        h("li", {}, h(id === active ? "a.active" : "a", { href, dataset: { nav: id } }, text)),
      ),
    ),
    h(
      "button.signout",
      {
        type: "button",
        onclick: () => {
          signOut();
          location.hash = "";
          renderSignIn();
        },
      },
      "Sign out",
    ),
  );
  root.replaceChildren(h("div.shell", {}, nav, main));
  return main;
}

async function route() {
  if (cleanup !== null) {
    cleanup();
    cleanup = null;
  }
  if (!signedIn()) return renderSignIn();
  const path = location.hash.replace(/^#/, "") || "/apis";
  const match = routes.map((entry) => ({ entry, found: entry.pattern.exec(path) })).find(({ found }) => found);
  if (match === undefined) {
    location.hash = "#/apis";
    return;
  }
  const main = layout(match.entry.nav);
  try {
    const done = await match.entry.page.render(main, match.found.slice(1));
    if (typeof done === "function") cleanup = done;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403 && error.code === "UNAUTHORIZED") {
      signOut();
      return renderSignIn(error);
    }
    main.replaceChildren();
    if (error instanceof ApiError && error.code === "INSUFFICIENT_PERMISSIONS") {
      const page = navItems.find(([id]) => id === match.entry.nav)?.[1] ?? "This page";
      main.append(
        h(
          "header.page-header",
          {},
          h("div", {}, h("h1", {}, page), h("p.subtitle", {}, "Not available with this root key.")),
        ),
        errorNotice(error),
      );
      return;
    }
    main.append(errorNotice(error));
  }
}

window.addEventListener("hashchange", route);
route();
