// The cluster as this node sees it: role, term, leader, indexes, staleness and every member's
// replication progress; refreshed every two seconds while the page is open.
import { get } from "../api.js";
import { add, badge, card, definitionList, h, pageHeader, table } from "../ui.js";

export const refreshMs = 2000;

function view(status) {
  const members = [
    {
      id: status.nodeId,
      address: "this node",
      voter: status.voters.includes(status.nodeId),
      lag: status.selfLag,
      connected: true,
      self: true,
    },
    ...status.peers,
  ];
  return [
    h(
      "div.stats",
      {},
      stat("Role", badge(status.role, status.role === "leader" ? "ok" : "neutral")),
      stat("Leader", status.leader ?? "none"),
      stat("Term", status.term),
      stat(
        "Staleness",
        status.stale ? badge(`${Math.round(status.stalenessMs)} ms`, "warn") : `${Math.round(status.stalenessMs)} ms`,
      ),
    ),
    card(
      "This node",
      definitionList([
        ["Node id", h("code", {}, status.nodeId)],
        ["Commit index", status.commitIndex],
        ["Applied index", status.appliedIndex],
        ["Snapshot index", status.snapshotIndex],
        ["Pending writes", status.pendingWrites],
        ["Staleness bound", `${status.maxStalenessMs} ms (${status.stalePolicy} when past it)`],
      ]),
    ),
    card(
      "Members",
      table(
        [
          { title: "Node", cell: (member) => h("strong", {}, member.id, member.id === status.leader ? " ★" : "") },
          {
            title: "Address",
            cell: (member) => (member.self ? h("span.muted", {}, "this node") : h("code", {}, member.address ?? "—")),
          },
          { title: "Kind", cell: (member) => (member.voter ? "voter" : "learner") },
          {
            title: "Connected",
            cell: (member) => (member.connected === false ? badge("no", "warn") : badge("yes", "ok")),
          },
          {
            title: "Lag (entries)",
            cell: (member) => (member.lag === null || member.lag === undefined ? "—" : member.lag),
          },
        ],
        members,
      ),
    ),
  ];
}

function stat(label, value) {
  return h("div.stat", {}, h("span.stat-label", {}, label), h("span.stat-value", {}, value));
}

export async function render(main) {
  const body = h("div");
  const updated = h("span.muted");
  add(main, pageHeader("Cluster", h("span", {}, "Refreshes itself every 2 s · ", updated)), body);
  const refresh = async () => {
    const status = await get("/v1/cluster.status");
    body.replaceChildren(...view(status));
    updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
  };
  await refresh();
  const timer = setInterval(
    () => refresh().catch((error) => (updated.textContent = `refresh failed: ${error.message}`)),
    refreshMs,
  );
  return () => clearInterval(timer);
}
