// Placeholder so the API compiles; the protocol lands in the next commit.
import type { ResolvedConfig } from "./config.js";
import type { Message } from "./messages.js";
import type { Ready } from "./ready.js";
import type { Status } from "./status.js";
import type { ConfChange, ConfState, NodeId, RaftStorage } from "./types.js";

/** Where a proposal was appended: it is committed iff the committed entry at `index` has `term`. */
export interface ProposalId {
  index: number;
  term: number;
}

export class Raft {
  constructor(readonly config: ResolvedConfig, readonly storage: RaftStorage) {}
  tick(): void { throw new Error("todo"); }
  campaignLocal(): void { throw new Error("todo"); }
  propose(_data: Uint8Array): ProposalId { throw new Error("todo"); }
  proposeConfChange(_change: ConfChange): ProposalId { throw new Error("todo"); }
  step(_message: Message): void { throw new Error("todo"); }
  readIndex(_context: Uint8Array): void { throw new Error("todo"); }
  transferLeadership(_to: NodeId): void { throw new Error("todo"); }
  reportUnreachable(_id: NodeId): void { throw new Error("todo"); }
  reportSnapshot(_id: NodeId, _ok: boolean): void { throw new Error("todo"); }
  hasReady(): boolean { throw new Error("todo"); }
  takeReady(): Ready { throw new Error("todo"); }
  advance(_ready: Ready): void { throw new Error("todo"); }
  status(): Status { throw new Error("todo"); }
  confState(): ConfState { throw new Error("todo"); }
}
