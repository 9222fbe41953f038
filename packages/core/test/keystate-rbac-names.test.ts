// Permission slugs and role names: unique and matched ignoring case, stored as given; the role's
// whole permission set replaced by slug (setRolePermissions); createRole creating missing slugs.
import { describe, expect, it } from "vitest";
import type { KeyCommand } from "../src/keystate/commands.js";
import { keyDerived } from "../src/keystate/derived.js";
import { keyStateViolation } from "../src/keystate/invariants.js";
import { applyCommand } from "../src/keystate/machine.js";
import { permissionIdOfSlug, roleIdOfName } from "../src/keystate/names.js";
import { restoreKeyState, snapshotKeyState } from "../src/keystate/snapshot.js";
import { createKeyState } from "../src/keystate/state.js";
import type { KeyState } from "../src/keystate/types.js";

const nowMs = Date.UTC(2026, 0, 10);

function apply(state: KeyState, command: KeyCommand) {
  const outcome = applyCommand(state, command);
  expect(keyStateViolation(state)).toBeNull();
  return outcome;
}

function withKeyAndRole(): KeyState {
  const s = createKeyState();
  const commands: KeyCommand[] = [
    { type: "createApi", apiId: "api_a", name: "a", nowMs },
    {
      type: "createPermission",
      permissionId: "perm_keep",
      name: "Keep",
      slug: "keep.permission",
      description: null,
      nowMs,
    },
    { type: "createRole", roleId: "role_1", name: "Editor", description: "edits", permissionIds: [], nowMs },
    {
      type: "createKey",
      keyId: "key_1",
      apiId: "api_a",
      hash: "h1",
      start: "s",
      name: null,
      ownerId: null,
      identity: null,
      meta: null,
      expiresAtMs: null,
      remaining: null,
      refill: null,
      ratelimit: null,
      enabled: true,
      environment: null,
      permissions: [],
      roles: [{ name: "editor", newId: "role_unused", create: false }],
      allowCreatePermissions: false,
      allowCreateRoles: false,
      nowMs,
    },
  ];
  for (const command of commands) expect(apply(s, command)).toMatchObject({ ok: true });
  return s;
}

const setRolePermissions = (slugs: string[], allowCreate = true): KeyCommand => ({
  type: "setRolePermissions",
  roleId: "role_1",
  refs: slugs.map((name, i) => ({ name, newId: `perm_new_${i}`, create: true })),
  allowCreate,
  nowMs,
});

describe("slugs and role names ignore case", () => {
  it("a slug or role name differing only in case is the same record; both are stored as given", () => {
    const s = withKeyAndRole();
    expect(permissionIdOfSlug(s, "KEEP.Permission")).toBe("perm_keep");
    expect(roleIdOfName(s, "EDITOR")).toBe("role_1");
    expect(s.keys.get("key_1")?.roleIds).toEqual(["role_1"]);
    expect(
      apply(s, {
        type: "createPermission",
        permissionId: "perm_2",
        name: "x",
        slug: "Keep.Permission",
        description: null,
        nowMs,
      }),
    ).toMatchObject({ ok: false, code: "CONFLICT" });
    expect(
      apply(s, { type: "createRole", roleId: "role_2", name: "EDITOR", description: null, permissionIds: [], nowMs }),
    ).toMatchObject({ ok: false, code: "CONFLICT" });
    expect(s.permissions.get("perm_keep")?.slug).toBe("keep.permission");
    expect(s.roles.get("role_1")?.name).toBe("Editor");
  });

  it("deleting a permission or role frees its name in every case", () => {
    const s = withKeyAndRole();
    expect(apply(s, { type: "deletePermission", permissionId: "perm_keep" })).toMatchObject({ ok: true });
    expect(permissionIdOfSlug(s, "keep.permission")).toBeUndefined();
    expect(apply(s, { type: "deleteRole", roleId: "role_1" })).toMatchObject({ ok: true });
    expect(roleIdOfName(s, "editor")).toBeUndefined();
    expect(
      apply(s, { type: "createRole", roleId: "role_2", name: "EDITOR", description: null, permissionIds: [], nowMs }),
    ).toMatchObject({ ok: true });
    expect(roleIdOfName(s, "Editor")).toBe("role_2");
  });

  it("a snapshot holding two slugs that differ only in case (written before folding) loads", () => {
    const s = withKeyAndRole();
    const snapshot = snapshotKeyState(s);
    snapshot.permissions.push({
      id: "perm_zz",
      name: "Keep upper",
      slug: "KEEP.PERMISSION",
      description: null,
      createdAtMs: nowMs,
    });
    const restored = restoreKeyState(snapshot);
    expect(keyStateViolation(restored)).toBeNull();
    // The lowest id answers the name; the other is still there by id.
    expect(permissionIdOfSlug(restored, "keep.permission")).toBe("perm_keep");
    expect(restored.permissions.has("perm_zz")).toBe(true);
    // Deleting the indexed one hands the name to the other.
    expect(apply(restored, { type: "deletePermission", permissionId: "perm_keep" })).toMatchObject({ ok: true });
    expect(permissionIdOfSlug(restored, "Keep.Permission")).toBe("perm_zz");
  });
});

describe("setRolePermissions", () => {
  it("replaces, deduplicates ignoring case, creates, repeats as a no-op, and clears", () => {
    const s = withKeyAndRole();
    const outcome = apply(s, setRolePermissions(["KEEP.Permission", "new.permission", "NEW.Permission"]));
    expect(outcome).toMatchObject({ ok: true, id: "role_1" });
    const role = s.roles.get("role_1");
    expect(role?.permissionIds).toEqual(["perm_keep", "perm_new_1"]);
    expect(s.permissions.get("perm_new_1")).toMatchObject({ slug: "new.permission", name: "new.permission" });
    // Keys holding the role see the new set.
    const key = s.keys.get("key_1")!;
    expect(keyDerived(s, key).permissions).toEqual(["keep.permission", "new.permission"]);

    const before = snapshotKeyState(s);
    expect(apply(s, setRolePermissions(["new.permission", "keep.permission"]))).toMatchObject({ ok: true });
    expect(snapshotKeyState(s)).toEqual(before);

    expect(apply(s, setRolePermissions([]))).toMatchObject({ ok: true });
    expect(s.roles.get("role_1")?.permissionIds).toEqual([]);
    expect(keyDerived(s, s.keys.get("key_1")!).permissions).toEqual([]);
  });

  it("refuses to create a missing slug without leave and changes nothing; an unknown role is NOT_FOUND", () => {
    const s = withKeyAndRole();
    const before = snapshotKeyState(s);
    expect(apply(s, setRolePermissions(["keep.permission", "missing"], false))).toMatchObject({
      ok: false,
      code: "INSUFFICIENT_PERMISSIONS",
    });
    expect(snapshotKeyState(s)).toEqual(before);
    expect(apply(s, { ...setRolePermissions([]), roleId: "role_x" } as KeyCommand)).toMatchObject({
      ok: false,
      code: "NOT_FOUND",
    });
  });
});

describe("createRole with slugs", () => {
  it("links existing slugs ignoring case and creates the missing ones when allowed", () => {
    const s = withKeyAndRole();
    const outcome = apply(s, {
      type: "createRole",
      roleId: "role_2",
      name: "viewer",
      description: null,
      permissionIds: [],
      permissions: {
        refs: [
          { name: "Keep.Permission", newId: "perm_a", create: true },
          { name: "docs.read", newId: "perm_b", create: true },
        ],
        allowCreate: true,
      },
      nowMs,
    });
    expect(outcome).toMatchObject({ ok: true, id: "role_2" });
    expect(s.roles.get("role_2")?.permissionIds).toEqual(["perm_b", "perm_keep"]);
    expect(permissionIdOfSlug(s, "DOCS.READ")).toBe("perm_b");
  });

  it("refuses a missing slug without leave to create and changes nothing", () => {
    const s = withKeyAndRole();
    const before = snapshotKeyState(s);
    expect(
      apply(s, {
        type: "createRole",
        roleId: "role_2",
        name: "viewer",
        description: null,
        permissionIds: [],
        permissions: { refs: [{ name: "docs.read", newId: "perm_b", create: true }], allowCreate: false },
        nowMs,
      }),
    ).toMatchObject({ ok: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(snapshotKeyState(s)).toEqual(before);
  });
});
