// The largest frame an open ws socket accepts, raised once a peer is authenticated. ws has no
// public setter; its receiver reads `_maxPayload` at each frame header, before buffering the
// payload (node_modules/ws/lib/receiver.js, haveLength), which is what makes the pre-auth cap
// cheap. The assertion catches a ws upgrade that moves the field (the transport tests send
// frames past the handshake size after authentication).
import type { WebSocket } from "ws";
import { assert } from "../core/assert.js";

interface ReceiverFields {
  _maxPayload?: unknown;
}

export function setFrameBytesMax(socket: WebSocket, bytes: number): void {
  assert(Number.isSafeInteger(bytes) && bytes > 0, "setFrameBytesMax: a positive byte count");
  const receiver = (socket as unknown as { _receiver?: ReceiverFields | null })._receiver;
  assert(
    receiver !== undefined && receiver !== null && typeof receiver._maxPayload === "number",
    "setFrameBytesMax: ws keeps the frame bound in its receiver's _maxPayload",
  );
  receiver._maxPayload = bytes;
}
