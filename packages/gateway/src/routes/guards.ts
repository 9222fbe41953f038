// Small checks shared by the routes.

import { metaJsonLengthMax, type JsonObject } from "@keyraft/core";
import { badRequest } from "../errors.js";

/** The single workspace a keyraft cluster is (decision 10). */
export const workspaceId = "ws_keyraft";

/** Bounds stored metadata: its JSON text must be shorter than 64k characters (upstream's rule). */
export function checkMeta(meta: JsonObject | null | undefined): void {
  if (meta === null || meta === undefined) return;
  const length = JSON.stringify(meta).length;
  if (length > metaJsonLengthMax) {
    throw badRequest(`metadata is too large, it must be less than 64k characters when json encoded, got: ${length}`);
  }
}
