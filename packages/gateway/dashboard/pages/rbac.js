// Roles and permissions: list, create and delete both; a role carries permissions.
import { get, post } from "../api.js";
import { add, button, card, confirmAction, field, form, h, pageHeader, table } from "../ui.js";

export async function render(main) {
  const [permissions, roles] = await Promise.all([
    get("/v1/permissions.listPermissions"),
    get("/v1/permissions.listRoles"),
  ]);
  const rerender = async () => {
    main.replaceChildren();
    await render(main);
  };
  const remove = (what, path, body) =>
    button(
      "Delete",
      async () => {
        if (!confirmAction(`Delete ${what}? Keys holding it lose it.`)) return;
        await post(path, body);
        await rerender();
      },
      "danger-link",
    );
  add(
    main,
    pageHeader("Roles & permissions", "Permissions are checked at verification; roles bundle them."),
    h(
      "div.grid",
      {},
      card(
        "Permissions",
        table(
          [
            { title: "Name", cell: (permission) => h("strong", {}, permission.name) },
            { title: "Id", cell: (permission) => h("code", {}, permission.id) },
            {
              title: "",
              cell: (permission) =>
                remove(permission.name, "/v1/permissions.deletePermission", { permissionId: permission.id }),
            },
          ],
          permissions,
          { empty: "No permissions yet." },
        ),
        form(
          [field("New permission", "name", { required: true, minlength: 3, placeholder: "documents.read" })],
          "Create",
          async (values) => {
            await post("/v1/permissions.createPermission", { name: values.name });
            await rerender();
          },
          { inline: true },
        ),
      ),
      card(
        "Roles",
        table(
          [
            { title: "Name", cell: (role) => h("strong", {}, role.name) },
            {
              title: "Permissions",
              cell: (role) => (role.permissions ?? []).map((p) => p.name ?? p).join(", ") || "none",
            },
            { title: "", cell: (role) => remove(role.name, "/v1/permissions.deleteRole", { roleId: role.id }) },
          ],
          roles,
          { empty: "No roles yet." },
        ),
        form(
          [field("New role", "name", { required: true, minlength: 3, placeholder: "admin" })],
          "Create",
          async (values) => {
            await post("/v1/permissions.createRole", { name: values.name });
            await rerender();
          },
          { inline: true },
        ),
      ),
    ),
  );
}
