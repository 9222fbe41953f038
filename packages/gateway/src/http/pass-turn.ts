// A plugin that only gives the event loop a turn. Fastify compiles a plugin's route schemas as it
// loads the plugin, and loads one plugin after another with no turn between them: a node's start
// compiled the whole API in one stretch, which held a joining node's loop for up to 1.1 s at a
// million keys (the scale bench). Registered between route plugins, it cuts that stretch into one
// per plugin.
import type { FastifyPluginAsync } from "fastify";
import { nextTurn } from "../cluster/turn-budget.js";

export const passTurn: FastifyPluginAsync = async () => {
  await nextTurn();
};
