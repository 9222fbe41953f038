// Application messages: payloads between members that are not Raft messages (forwarded writes,
// membership requests, ...), multiplexed on the Raft transport's authenticated connection. The
// shape matches Raft messages (type, from, to, term) so that the transport validates and frames
// them like any other; term is always 0 and the driver routes them away before the core.

import type { Message } from "../core/messages.js";
import type { NodeId } from "../core/types.js";

export const applicationMessageType = "application";

export interface ApplicationMessage {
  type: typeof applicationMessageType;
  from: NodeId;
  to: NodeId;
  term: 0;
  payload: Uint8Array;
}

/** What travels on a RaftNode's connections. */
export type WireMessage = Message | ApplicationMessage;

export function isApplicationMessage(message: WireMessage): message is ApplicationMessage {
  return message.type === applicationMessageType;
}
