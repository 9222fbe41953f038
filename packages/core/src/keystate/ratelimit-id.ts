import { sha256Base64 } from "../hash/sha256.js";

/** Characters of hash kept in a rate-limit id (about 119 bits). */
const ratelimitIdHashChars = 20;

/**
 * The id (`rl_...`) of the rate-limit definition `name` of a key or identity `ownerId`. A pure
 * function of the two, so every replica names a definition alike without storing an id, the id
 * survives updates of the definition (v2 updateKey/updateIdentity keep ids of updated names) and
 * a rerolled key's limits get ids of their own.
 */
export function ratelimitId(ownerId: string, name: string): string {
  const digest = sha256Base64(`${ownerId}/${name}`).replace(/[^a-zA-Z0-9]/g, "");
  return `rl_${digest.slice(0, ratelimitIdHashChars)}`;
}
