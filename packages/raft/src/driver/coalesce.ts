// Append coalescing. The core emits one append per proposal per follower (and an empty one per
// commit advance); with many concurrent proposers one Ready can hold dozens of appends to the same
// follower, each of which the follower would answer separately. Consecutive appends to one peer
// that chain exactly (the second starts where the first ends) are merged into one: the follower
// does the same work as for the sequence, answers once, and the leader's in-flight window is freed
// by that one answer (responses free every in-flight index <= the acknowledged one).
// Likewise a follower's consecutive successful append responses to the leader collapse into the
// last one: acknowledging index i acknowledges everything below it.

import type { AppendMessage, AppendResponseMessage, ReadyMessage } from "../core/messages.js";
import type { Entry } from "../core/types.js";

/** Largest entry data merged into one append (a merged message must stay far below the transport's messageBytesMax). */
export const coalescedAppendBytesMax = 1 << 20;

export function coalesceAppends(messages: readonly ReadyMessage[]): ReadyMessage[] {
  const result: ReadyMessage[] = [];
  /** Per destination: position in `result` of its last message, if that is an append (or a successful append response) we may extend. */
  const lastAppend = new Map<string, { at: number; bytes: number; owned: boolean } | null>();
  for (const message of messages) {
    const previous = lastAppend.get(message.to);
    const head = previous === undefined || previous === null ? undefined : result[previous.at];
    if (message.type === "appResp" && previous && head?.type === "appResp" && supersedes(message, head)) {
      result[previous.at] = message;
      continue;
    }
    if (message.type === "appResp" && !message.reject) {
      result.push(message);
      lastAppend.set(message.to, { at: result.length - 1, bytes: 0, owned: false });
      continue;
    }
    if (message.type !== "app") {
      result.push(message);
      lastAppend.set(message.to, null);
      continue;
    }
    const bytes = dataBytes(message.entries);
    if (
      previous &&
      head?.type === "app" &&
      chains(head, message) &&
      previous.bytes + bytes <= coalescedAppendBytesMax
    ) {
      // The first merge copies the head (the core's message is not ours to change); later merges extend that copy in place.
      const merged = previous.owned ? head : { ...head, entries: [...head.entries] };
      for (const entry of message.entries) merged.entries.push(entry);
      merged.commit = Math.max(merged.commit, message.commit);
      result[previous.at] = merged;
      previous.bytes += bytes;
      previous.owned = true;
      continue;
    }
    result.push(message);
    lastAppend.set(message.to, { at: result.length - 1, bytes, owned: false });
  }
  return result;
}

/** `next` continues `first`: same term, and its previous entry is `first`'s last one. */
function chains(first: AppendMessage, next: AppendMessage): boolean {
  if (first.term !== next.term || first.from !== next.from) return false;
  const last = first.entries[first.entries.length - 1];
  const lastIndex = last?.index ?? first.index;
  const lastTerm = last?.term ?? first.logTerm;
  return next.index === lastIndex && next.logTerm === lastTerm;
}

/** A successful response at a higher (or equal) index, same term, makes an earlier successful one redundant. */
function supersedes(next: AppendResponseMessage, earlier: AppendResponseMessage): boolean {
  return (
    !next.reject &&
    !earlier.reject &&
    next.term === earlier.term &&
    next.from === earlier.from &&
    next.index >= earlier.index
  );
}

function dataBytes(entries: readonly Entry[]): number {
  let bytes = 0;
  for (const entry of entries) bytes += entry.data.byteLength;
  return bytes;
}
