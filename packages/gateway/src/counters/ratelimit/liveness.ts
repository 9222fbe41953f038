// Which peers are up, as the rate limits see them: a peer is up while it has been heard from (a
// beat, a request or a reply) within `suspectAfterMs` and no call to it has found the connection
// closed since. Beats go every reconcile period, so a live peer is heard several times per
// suspicion window; a killed peer's connection closes at once (its next beat is not sent), a
// stopped (SIGSTOP) or cut-off one is suspected after `suspectAfterMs` of silence. Suspicion is
// only a hint: the reservations' generations keep every limit safe when it is wrong.

/** Peers tracked; past it, unknown peers are simply "down". */
export const livenessPeersMax = 64;

export class PeerLiveness {
  private readonly heardAtMs = new Map<string, number>();

  constructor(private readonly suspectAfterMs: number) {}

  heard(peer: string, nowMs: number): void {
    if (!this.heardAtMs.has(peer) && this.heardAtMs.size >= livenessPeersMax) return;
    this.heardAtMs.set(peer, nowMs);
  }

  /** A call found no open connection: the peer is down until heard from again. */
  lost(peer: string): void {
    this.heardAtMs.delete(peer);
  }

  isUp(peer: string, nowMs: number): boolean {
    const at = this.heardAtMs.get(peer);
    return at !== undefined && nowMs - at < this.suspectAfterMs;
  }
}
