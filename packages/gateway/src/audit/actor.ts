// Which root key a request authenticated as, remembered for the audit context of the writes it
// makes (context.ts submit). Keyed by the request object, so nothing outlives the request.
import type { FastifyRequest } from "fastify";

const actors = new WeakMap<FastifyRequest, string>();

export function rememberActor(request: FastifyRequest, rootKeyId: string): void {
  actors.set(request, rootKeyId);
}

/** The root key id `request` authenticated with, or null when it did not authenticate. */
export function actorOf(request: FastifyRequest): string | null {
  return actors.get(request) ?? null;
}
