/**
 * Names, not ids: a session is shown by its title with its channel's icon (Telegram, Discord, the web
 * chat, the API, cron, the heartbeat), never as `agent:main:gateway:api-9994d2ea-…`. Titles come from
 * `sessions.names` (owner-only), asked once per session and kept for the page's life.
 */
import { gateway } from "./gateway";
import { useLoad } from "./hooks";

/** The channel a session key belongs to (internal/session/keys.ts shapes). */
export function channelOf(key: string | null | undefined): string {
  if (!key) return "other";
  if (key === "heartbeat") return "heartbeat";
  const p = key.split(":");
  if (p[0] === "cron") return "cron";
  if (p[0] !== "agent" || p.length < 4) return "other";
  // A gateway session: the web chat names its chats web-…, /api and /v1 clients api-… or their own.
  if (p[2] === "gateway") return /^api-/.test(p[3] ?? "") ? "api" : "web";
  return p[2] ?? "other";
}

const LABEL: Record<string, string> = {
  telegram: "Telegram",
  discord: "Discord",
  web: "web chat",
  api: "API",
  cron: "cron",
  heartbeat: "heartbeat",
  other: "other",
};
/** A channel's name in words ("Telegram", "web chat"). */
export const channelLabel = (c: string): string => LABEL[c] ?? c;

// 24×24 strokes in currentColor; each channel has its own hue in styles.css (`.ch-<channel>`).
const PATHS: Record<string, string[]> = {
  telegram: ["M21 4 3 11.5l6.5 2L12 20l3-4.5 5 3.5z", "M9.5 13.5 21 4"],
  discord: [
    "M7 6.5c3.3-1.3 6.7-1.3 10 0l2.5 9.5c-1.8 1.6-3.6 2.3-5 2.5l-1-2",
    "M7 6.5 4.5 16c1.8 1.6 3.6 2.3 5 2.5l1-2",
    "M9.5 12h.01M14.5 12h.01",
  ],
  web: ["M4 5h16v11H10l-6 4z"],
  api: ["M8.5 7 4 12l4.5 5", "M15.5 7 20 12l-4.5 5"],
  cron: ["M12 4a8 8 0 1 0 0 16a8 8 0 1 0 0-16", "M12 8v4l3 2"],
  heartbeat: ["M3 12h4l2.5-5 3.5 10 2.5-5H21"],
  other: ["M12 8a4 4 0 1 0 0 8a4 4 0 1 0 0-8"],
};

/** A channel's icon, labelled for screen readers and on hover. */
export function ChannelIcon(props: { channel: string }) {
  const c = PATHS[props.channel] ? props.channel : "other";
  return (
    <span
      class={`ch ch-${c}`}
      title={channelLabel(props.channel)}
      role="img"
      aria-label={channelLabel(props.channel)}
    >
      <svg viewBox="0 0 24 24" aria-hidden="true">
        {PATHS[c]!.map((d) => (
          <path key={d} d={d} />
        ))}
      </svg>
    </span>
  );
}

/** A named session, as `sessions.names` answers. */
export interface SessionName {
  id: string;
  key: string;
  agentId: string;
  title: string | null;
}

const known = new Map<string, SessionName>();

/**
 * Titles for the sessions a view shows, by id or key (looked up once each); `name(idOrKey)` is the
 * session's record once known.
 */
export function useSessionNames(
  ids: (string | null | undefined)[],
  keys: (string | null | undefined)[] = [],
) {
  const wantIds = [...new Set(ids.filter((x): x is string => !!x))].filter((i) => !known.has(i));
  const wantKeys = [...new Set(keys.filter((x): x is string => !!x))].filter((k) => !known.has(k));
  const ask = [...wantIds, "|", ...wantKeys].join(",");
  const l = useLoad(async () => {
    if (wantIds.length + wantKeys.length === 0) return 0;
    const r = await gateway.call<{ sessions: SessionName[] }>("sessions.names", {
      ids: wantIds,
      keys: wantKeys,
    });
    for (const s of r.sessions) {
      known.set(s.id, s);
      known.set(s.key, s);
    }
    return r.sessions.length;
  }, [ask]);
  return {
    name: (idOrKey: string | null | undefined) => (idOrKey ? known.get(idOrKey) : undefined),
    loaded: l.data,
  };
}

/** A session shown by name: its channel's icon and its title (the key on hover), or the key when untitled. */
export function SessionLabel(props: {
  sessionKey: string | null | undefined;
  title: string | null | undefined;
}) {
  const key = props.sessionKey ?? "";
  return (
    <span class="sess-name" title={key}>
      <ChannelIcon channel={channelOf(key)} /> <span class="sess-title">{props.title || shortKey(key)}</span>
    </span>
  );
}

/** A key without its agent prefix ("telegram:dm:4242"), for a session without a title. */
export const shortKey = (key: string): string => key.replace(/^agent:[^:]+:/, "");
