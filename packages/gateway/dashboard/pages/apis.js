// APIs: every api the root key may read, with its number of keys; create one.
import { get, post } from "../api.js";
import { add, card, field, form, h, pageHeader, table } from "../ui.js";

export async function render(main) {
  const { apis } = await get("/v1/apis.listApis");
  add(
    main,
    pageHeader("APIs", "Each API holds keys. Pick one to see and manage its keys."),
    card(
      null,
      table(
        [
          { title: "Name", cell: (api) => h("a.strong", { href: `#/apis/${api.id}` }, api.name) },
          { title: "API id", cell: (api) => h("code", {}, api.id) },
          { title: "Keys", cell: (api) => h("span.num", {}, api.keys) },
        ],
        apis,
        { empty: "No APIs yet: create the first one below.", onRow: (api) => (location.hash = `#/apis/${api.id}`) },
      ),
    ),
    card(
      "Create an API",
      form(
        [field("Name", "name", { required: true, minlength: 3, placeholder: "payments" })],
        "Create API",
        async (values) => {
          const created = await post("/v1/apis.createApi", { name: values.name });
          location.hash = `#/apis/${created.apiId}`;
        },
        { inline: true },
      ),
    ),
  );
}
