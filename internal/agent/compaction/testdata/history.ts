/**
 * Synthetic but realistic conversation histories for compaction tests: user requests, assistant tool
 * calls with their results, and answers, with identifiers planted in the older part.
 */
import type { ChatMessage } from "../../../models/types.js";

/** Identifiers planted in the history; every one must survive into the summary. */
export const plantedIds = [
  "ORD-2024-77812",
  "/srv/data/reports/q3-2291.csv",
  "https://status.example.net/incidents/4411?ref=ops",
  "Ann Mueller",
  "cus_Q8vX3kLm9Tz2",
  "7c9e6679-7425-40de-944b-e07fc1f90ae7",
  "v2.31.4",
  "+49 30 1234 5678",
];

/** Matches the planted identifier shapes (for the fake summariser). */
export const idPattern =
  /ORD-\d{4}-\d+|\/srv\/[\w./-]+|https:\/\/[\w./?=&-]+|Ann Mueller|cus_\w+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|v\d+\.\d+\.\d+|\+49 30 1234 5678/g;

const filler =
  "The quarterly numbers look stable, but the west region still lags behind the forecast by a few points and the team wants to understand why before the planning meeting. ";

/**
 * `rounds` rounds of 4 messages (user, assistant tool call, tool result, assistant answer); planted ids
 * go into the rounds listed in `plantAt` (user text, tool args and the head of the tool result).
 */
export function makeHistory(
  rounds: number,
  opts: { plantAt?: number[]; bigToolResult?: number } = {},
): ChatMessage[] {
  const out: ChatMessage[] = [];
  const plant = new Map<number, string>();
  (opts.plantAt ?? []).forEach((r, i) => plant.set(r, plantedIds[i % plantedIds.length]!));
  for (let r = 0; r < rounds; r++) {
    const id = plant.get(r);
    const extra = id ? ` Please note ${id} for later.` : "";
    out.push({
      role: "user",
      content: `Round ${r}: can you check the report for week ${r % 52}?${extra} ${filler}`,
    });
    const callId = `call_${r}`;
    out.push({
      role: "assistant",
      content: "",
      tool_calls: [
        { id: callId, name: "read_file", arguments: JSON.stringify({ path: `reports/week-${r}.md` }) },
      ],
    });
    const body = `# Week ${r}\n${id ? `Reference: ${id}\n` : ""}${"Revenue 1,204,331; churn 2.1%; NPS 41. ".repeat(opts.bigToolResult ?? 20)}`;
    out.push({ role: "tool", tool_call_id: callId, name: "read_file", content: body });
    out.push({
      role: "assistant",
      content: `Week ${r} looks fine: revenue is on plan.${id ? ` Noted ${id}.` : ""} ${filler}`,
    });
  }
  return out;
}
