// The application channel on the cluster's authenticated connection: payloads between members
// that are not Raft messages (forwarded writes, membership requests), multiplexed on the Raft
// transport as messages of type "application".
//
// Uses RaftNode.sendAppMessage / the onAppMessage option when the Raft package has them; until
// then it reaches the node's transport directly (the same messages on the same connection).
import type { NodeId, RaftNode } from "@keyraft/raft";

export const applicationMessageType = "application";

interface ApplicationMessage {
  type: typeof applicationMessageType;
  from: NodeId;
  to: NodeId;
  term: 0;
  payload: Uint8Array;
}

interface TransportInternals {
  transport: { send(messages: readonly ApplicationMessage[]): void; isConnected(id: NodeId): boolean };
  push(input: { kind: string; message?: { type?: string; from?: string; payload?: unknown } }): void;
}

interface NativeAppChannel {
  sendAppMessage?(to: NodeId, payload: Uint8Array): boolean;
}

/** Routes received application messages to `onMessage`; returns the sender. */
export function attachAppChannel(node: RaftNode, onMessage: (from: NodeId, payload: Uint8Array) => void): (to: NodeId, payload: Uint8Array) => boolean {
  const native = node as unknown as NativeAppChannel;
  if (typeof native.sendAppMessage === "function") return (to, payload) => native.sendAppMessage?.(to, payload) ?? false;
  const internals = node as unknown as TransportInternals;
  if (typeof internals.push !== "function" || typeof internals.transport?.send !== "function") {
    throw new Error("app channel: this RaftNode has neither sendAppMessage nor the transport it used to reach; update cluster/app-channel.ts");
  }
  const push = internals.push.bind(node);
  internals.push = (input) => {
    const message = input.message;
    if (input.kind === "message" && message?.type === applicationMessageType) {
      if (typeof message.from === "string" && message.payload instanceof Uint8Array) onMessage(message.from, message.payload);
      return;
    }
    push(input);
  };
  return (to, payload) => {
    if (!internals.transport.isConnected(to)) return false;
    internals.transport.send([{ type: applicationMessageType, from: node.id, to, term: 0, payload }]);
    return true;
  };
}
