// The JSON body parser: rejects invalid UTF-8 and nesting deeper than `jsonDepthMax` with a 400
// before parsing (deep values would otherwise reach recursive code: validation, serialization,
// the command codec), then parses with Fastify's prototype-poisoning-safe parser.

import { isUtf8 } from "node:buffer";
import type { FastifyInstance } from "fastify";
import { badRequest } from "../errors.js";

/** Deepest nesting of arrays/objects a request body may have. */
export const jsonDepthMax = 32;

/** Deepest array/object nesting of JSON text (strings skipped); stops counting past `limit`. */
export function jsonNestingDepth(bytes: Uint8Array, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === 0x5c)
        i++; // backslash: skip the escaped character
      else if (byte === 0x22) inString = false;
      continue;
    }
    if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (byte === 0x7d || byte === 0x5d) depth--;
  }
  return deepest;
}

export function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) {
      done(badRequest("Malformed JSON in request body"), undefined);
      return;
    }
    if (!isUtf8(bytes)) {
      done(badRequest("the request body is not valid UTF-8"), undefined);
      return;
    }
    if (jsonNestingDepth(bytes, jsonDepthMax) > jsonDepthMax) {
      done(badRequest(`the request body is nested deeper than ${jsonDepthMax} levels`), undefined);
      return;
    }
    parseJson(request, bytes.toString("utf8"), (error, value) => {
      if (error) done(badRequest("Malformed JSON in request body"), undefined);
      else done(null, value);
    });
  });
}
