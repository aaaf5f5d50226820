/**
 * A turn in progress, watched live: the session's `chat` events (owner clients receive every chat's)
 * drawn as they come: the answer streaming in, each tool call running, ok or failed, notices such as
 * a compaction. When the turn ends the transcript reloads and holds the stored truth.
 */
import { useEffect, useState } from "preact/hooks";
import { useEvents } from "../hooks";
import { Badge, Card, fmtDur } from "../ui";

interface Live {
  runId: string;
  started: number;
  text: string;
  tools: { callId: string; name: string; state: "running" | "ok" | "error"; ms?: number }[];
  notices: string[];
}
type ChatEvent = {
  state: string;
  runId: string;
  sessionKey: string;
  delta?: string;
  phase?: "start" | "end";
  callId?: string;
  name?: string;
  isError?: boolean;
  durationMs?: number;
  text?: string;
};

export function LiveTurn(props: { sessionKey: string }) {
  const [live, setLive] = useState<Live | undefined>(undefined);
  const [, tick] = useState(0);
  useEvents(["chat"], (_e, payload) => {
    const p = payload as ChatEvent;
    if (!p || p.sessionKey !== props.sessionKey) return;
    setLive((cur) => {
      if (p.state === "started")
        return { runId: p.runId, started: Date.now(), text: "", tools: [], notices: [] };
      const l =
        cur && cur.runId === p.runId
          ? cur
          : { runId: p.runId, started: Date.now(), text: "", tools: [], notices: [] };
      if (p.state === "delta") return { ...l, text: l.text + (p.delta ?? "") };
      if (p.state === "tool" && p.callId) {
        const tools = l.tools.filter((t) => t.callId !== p.callId);
        const state = p.phase === "start" ? "running" : p.isError ? "error" : "ok";
        return {
          ...l,
          tools: [
            ...tools,
            {
              callId: p.callId,
              name: p.name ?? "tool",
              state,
              ...(p.durationMs !== undefined ? { ms: p.durationMs } : {}),
            },
          ],
        };
      }
      if (p.state === "notice") return { ...l, notices: [...l.notices, p.text ?? ""] };
      if (p.state === "final" || p.state === "error" || p.state === "aborted") return undefined;
      return l;
    });
  });
  // The elapsed time moves while a turn runs.
  useEffect(() => {
    if (!live) return;
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, [live?.runId]);
  if (!live) return null;
  return (
    <Card
      title="Turn in progress"
      id="live-turn"
      actions={<Badge state="running">running · {fmtDur(Date.now() - live.started)}</Badge>}
    >
      {live.tools.length > 0 && (
        <ul class="chips">
          {live.tools.map((t) => (
            <li key={t.callId} data-state={t.state}>
              {t.name} <Badge state={t.state} />{" "}
              {t.ms !== undefined && <span class="muted">{fmtDur(t.ms)}</span>}
            </li>
          ))}
        </ul>
      )}
      {live.notices.map((n, i) => (
        <p class="muted" key={i}>
          {n}
        </p>
      ))}
      <div class="msg assistant live-text">
        {live.text || <span class="muted">Waiting for the model's first words…</span>}
      </div>
    </Card>
  );
}
