// Small checks shared by the routes.

import { metaJsonLengthMax, type JsonObject } from "@keyraft/core";
import { badRequest } from "../errors.js";

/** The single workspace a keyraft cluster is (decision 10). */
export const workspaceId = "ws_keyraft";

/** The message when `meta`'s JSON text is longer than keyraft's one bound (64,000 characters), else null. */
export function metaTooLarge(meta: JsonObject | null | undefined): string | null {
  if (meta === null || meta === undefined) return null;
  const length = JSON.stringify(meta).length;
  if (length <= metaJsonLengthMax) return null;
  return `metadata is too large, it must be less than 64k characters when json encoded, got: ${length}`;
}

/** Bounds stored metadata: its JSON text must be shorter than 64k characters (upstream's rule). */
export function checkMeta(meta: JsonObject | null | undefined): void {
  const message = metaTooLarge(meta);
  if (message !== null) throw badRequest(message);
}
