import type { CommandArgs } from "../datadriven.js";
import type { InteractionEnv } from "../env.js";
import { handleAddNodes } from "./add-nodes.js";
import { handleCampaign } from "./campaign.js";
import { handleCompact } from "./compact.js";
import { handleConfChange } from "./conf-change.js";
import { handleCrash, handleRestart } from "./crash.js";
import { handleDeliverMsgs } from "./deliver-msgs.js";
import { handleLog } from "./log.js";
import { handleCut, handleHeal, handleIsolate } from "./network.js";
import { handleProcessReady } from "./process-ready.js";
import { handlePropose } from "./propose.js";
import { handleReadIndex } from "./read-index.js";
import { handleStabilize } from "./stabilize.js";
import { handleStatus } from "./status.js";
import { handleTick } from "./tick.js";
import { handleTransferLeadership } from "./transfer.js";

export type Handler = (env: InteractionEnv, args: CommandArgs) => void;

/** Every transcript command and its handler (one file per command). */
export const handlers: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ["add-nodes", handleAddNodes],
  ["campaign", handleCampaign],
  ["compact", handleCompact],
  ["crash", handleCrash],
  ["cut", handleCut],
  ["deliver-msgs", handleDeliverMsgs],
  ["heal", handleHeal],
  ["isolate", handleIsolate],
  ["log", handleLog],
  ["process-ready", handleProcessReady],
  ["propose", handlePropose],
  ["propose-conf-change", handleConfChange],
  ["read-index", handleReadIndex],
  ["restart", handleRestart],
  ["stabilize", handleStabilize],
  ["status", handleStatus],
  ["tick", handleTick],
  ["transfer-leadership", handleTransferLeadership],
]);
