// The search of the v2 list routes (listIdentities, listPermissions, listRoles).

/** Upstream's search: trimmed, case-insensitive substring of any of the fields; empty = everything. */
export function searchMatcher(search: string | undefined): (...fields: (string | null)[]) => boolean {
  const needle = (search ?? "").trim().toLowerCase();
  if (needle === "") return () => true;
  return (...fields) => fields.some((field) => field !== null && field.toLowerCase().includes(needle));
}
