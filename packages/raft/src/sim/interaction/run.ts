import { assert } from "../../core/assert.js";
import { runTranscript, type TranscriptResult } from "./datadriven.js";
import { InteractionEnv } from "./env.js";
import { handlers } from "./handlers/index.js";

/** Runs a transcript against a fresh InteractionEnv. */
export function runInteractionTranscript(text: string): TranscriptResult {
  const env = new InteractionEnv();
  return runTranscript(text, (args) => {
    const handler = handlers.get(args.command);
    assert(handler !== undefined, `unknown command ${args.command}`);
    handler(env, args);
    return env.takeOutput();
  });
}
