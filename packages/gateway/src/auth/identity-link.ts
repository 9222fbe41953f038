// Linking a key to an identity by externalId. A new identity is created freely (upstream's
// upsert), but linking to one that EXISTS lets the key read the identity's meta through
// verifyKey and spend the counters every key of the identity shares: that needs an identity
// permission, `identity.*.update_identity` or `identity.<identityId>.update_identity` (the v1
// names, docs/api.md), or `*`. The decision travels in the command (mayLinkExisting), so an
// identity created by someone else between this check and the apply is refused too.

import { ROOT_PERMISSION, type IdentityLink, type KeyState } from "@keyraft/core";
import { insufficientPermissions } from "../errors.js";
import { holdsAny } from "./root-key.js";

/**
 * The link to put in the command, or `refuse(identityId)` thrown for an existing identity the
 * caller may not link (v1's error by default; the v2 routes pass their own body).
 */
export function identityLink(
  state: KeyState,
  auth: { slugs: ReadonlySet<string> },
  externalId: string,
  newIdentityId: string,
  refuse: (identityId: string) => Error = identityLinkRefused,
): IdentityLink {
  const existing = state.identityIdByExternalId.get(externalId);
  const mayLinkExisting = holdsAny(
    auth,
    ROOT_PERMISSION,
    "identity.*.update_identity",
    ...(existing === undefined ? [] : [`identity.${existing}.update_identity`]),
  );
  if (existing !== undefined && !mayLinkExisting) throw refuse(existing);
  return { externalId, newIdentityId, mayLinkExisting };
}

export function identityLinkRefused(identityId: string) {
  return insufficientPermissions(
    `linking a key to the existing identity ${identityId} needs identity.*.update_identity or identity.${identityId}.update_identity`,
  );
}
