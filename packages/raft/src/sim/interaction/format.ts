import { decodeConfChange } from "../../core/confchange.js";
import type { ReadyMessage } from "../../core/messages.js";
import { parseRoundContext } from "../../core/read-only.js";
import type { Ready } from "../../core/ready.js";
import type { Entry } from "../../core/types.js";

const decoder = new TextDecoder();

export function formatData(data: Uint8Array): string {
  return JSON.stringify(decoder.decode(data));
}

export function formatEntry(entry: Entry): string {
  if (entry.type === "conf") {
    const change = decodeConfChange(entry.data);
    return `${entry.term}/${entry.index} conf ${change.type} ${change.node}`;
  }
  return `${entry.term}/${entry.index} ${formatData(entry.data)}`;
}

function formatEntries(entries: readonly Entry[]): string {
  return `[${entries.map(formatEntry).join(", ")}]`;
}

function formatContext(context: Uint8Array | null): string {
  return context === null ? "" : ` ctx=${formatData(context)}`;
}

/** A heartbeat's context is the leader's read round (core/read-only.ts). */
function formatRound(context: Uint8Array | null): string {
  if (context === null) return "";
  const round = parseRoundContext(context);
  return round === null ? formatContext(context) : ` round=${round}`;
}

/** One line per message, stable across runs (transcripts compare these). A chunk reference reads as the chunk it names. */
export function formatMessage(m: ReadyMessage): string {
  const head = `${m.from}->${m.to} ${m.type === "vote" && m.preVote ? "preVote" : m.type === "voteResp" && m.preVote ? "preVoteResp" : m.type} term=${m.term}`;
  switch (m.type) {
    case "app":
      return `${head} log=${m.logTerm}/${m.index} commit=${m.commit} entries=${formatEntries(m.entries)}`;
    case "appResp":
      return m.reject
        ? `${head} rejected index=${m.index} hint=${m.logTerm}/${m.rejectHint}`
        : `${head} index=${m.index}`;
    case "vote":
      return `${head} last=${m.lastLogTerm}/${m.lastLogIndex}${m.transfer ? " transfer" : ""}`;
    case "voteResp":
      return m.reject ? `${head} rejected` : head;
    case "heartbeat":
      return `${head} commit=${m.commit}${formatRound(m.context)}`;
    case "heartbeatResp":
      return `${head}${formatRound(m.context)}`;
    case "snap":
      return `${head} snapshot=${m.metadata.term}/${m.metadata.index} offset=${m.offset} bytes=${m.data.byteLength} total=${m.totalBytes}`;
    case "snapRef":
      return `${m.from}->${m.to} snap term=${m.term} snapshot=${m.metadata.term}/${m.metadata.index} offset=${m.offset} bytes=${m.length} total=${m.totalBytes}`;
    case "snapResp":
      return `${head} snapshot=${m.snapshotIndex} next=${m.nextOffset}`;
    case "timeoutNow":
      return head;
    case "readIndex":
      return `${head}${formatContext(m.context)}`;
    case "readIndexResp":
      return m.reject
        ? `${head} rejected${formatContext(m.context)}`
        : `${head} index=${m.index}${formatContext(m.context)}`;
    case "transferLeader":
      return `${head} transferee=${m.transferee}`;
    default: {
      const never: never = m;
      return never;
    }
  }
}

export function formatReady(ready: Ready): string[] {
  const lines: string[] = [];
  if (ready.softState !== undefined)
    lines.push(`  role=${ready.softState.role} leader=${ready.softState.leader || "-"}`);
  if (ready.hardState !== null) {
    const hs = ready.hardState;
    lines.push(
      `  hardState term=${hs.term} vote=${hs.vote || "-"} commit=${hs.commit}${ready.mustSync ? " (sync)" : ""}`,
    );
  }
  if (ready.entries.length > 0) lines.push(`  entries: ${ready.entries.map(formatEntry).join(", ")}`);
  if (ready.snapshot !== null) {
    const meta = ready.snapshot.metadata;
    lines.push(
      `  snapshot: ${meta.term}/${meta.index} voters=${meta.conf.voters.join(",")} learners=${meta.conf.learners.join(",")}`,
    );
  }
  if (ready.committedEntries.length > 0) lines.push(`  apply: ${ready.committedEntries.map(formatEntry).join(", ")}`);
  for (const read of ready.readStates) lines.push(`  readState index=${read.index}${formatContext(read.context)}`);
  for (const context of ready.droppedReads) lines.push(`  droppedRead${formatContext(context)}`);
  for (const message of ready.messagesBeforePersist) lines.push(`  send ${formatMessage(message)}`);
  for (const message of ready.messages) lines.push(`  send ${formatMessage(message)}`);
  return lines;
}
