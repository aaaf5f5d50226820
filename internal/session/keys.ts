/**
 * Session keys: the one place that builds and parses them.
 *
 * - `agent:<agentId>:<channel>:dm:<peerId>`
 * - `agent:<agentId>:<channel>:group:<chatId>[:thread:<threadId>]`
 * - `agent:<agentId>:gateway:<name>`
 * - `cron:<jobId>`
 * - `heartbeat`
 */
export type SessionKeyParts =
  | { kind: "dm"; agentId: string; channel: string; peerId: string }
  | { kind: "group"; agentId: string; channel: string; chatId: string; threadId?: string }
  | { kind: "gateway"; agentId: string; name: string }
  | { kind: "cron"; jobId: string }
  | { kind: "heartbeat" }
  | { kind: "other"; key: string };

const SAFE = /^[^:\s]+$/;

function check(label: string, v: string): string {
  if (!SAFE.test(v))
    throw new Error(`invalid ${label} in session key: ${JSON.stringify(v)} (no ':' or spaces)`);
  return v;
}

export const sessionKeys = {
  dm: (agentId: string, channel: string, peerId: string | number): string =>
    `agent:${check("agent id", agentId)}:${check("channel", channel)}:dm:${check("peer id", String(peerId))}`,
  group: (agentId: string, channel: string, chatId: string | number, threadId?: string | number): string =>
    `agent:${check("agent id", agentId)}:${check("channel", channel)}:group:${check("chat id", String(chatId))}` +
    (threadId !== undefined ? `:thread:${check("thread id", String(threadId))}` : ""),
  gateway: (agentId: string, name: string): string =>
    `agent:${check("agent id", agentId)}:gateway:${check("name", name)}`,
  cron: (jobId: string): string => `cron:${check("job id", jobId)}`,
  heartbeat: (): string => "heartbeat",
};

/** Parses a session key; unknown shapes come back as `{kind: "other"}`. */
export function parseSessionKey(key: string): SessionKeyParts {
  if (key === "heartbeat") return { kind: "heartbeat" };
  const p = key.split(":");
  if (p[0] === "cron" && p.length === 2 && p[1]) return { kind: "cron", jobId: p[1] };
  if (p[0] === "agent" && p.length >= 4) {
    const agentId = p[1] ?? "";
    if (p[2] === "gateway" && p.length === 4) return { kind: "gateway", agentId, name: p[3] ?? "" };
    const channel = p[2] ?? "";
    if (p[3] === "dm" && p.length === 5) return { kind: "dm", agentId, channel, peerId: p[4] ?? "" };
    if (p[3] === "group" && (p.length === 5 || (p.length === 7 && p[5] === "thread"))) {
      return p.length === 7
        ? { kind: "group", agentId, channel, chatId: p[4] ?? "", threadId: p[6] ?? "" }
        : { kind: "group", agentId, channel, chatId: p[4] ?? "" };
    }
  }
  return { kind: "other", key };
}

/** The agent id a key names, if any. */
export function agentOfKey(key: string): string | undefined {
  const parts = parseSessionKey(key);
  return "agentId" in parts ? parts.agentId : undefined;
}
