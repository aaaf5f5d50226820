/** One session: its facts, lineage and summaries, actions, and the transcript with tool calls folded. */
import { useEffect, useState } from "preact/hooks";
import { api, gateway } from "../gateway";
import { usePoll, useLoad, useReloadOn } from "../hooks";
import { ChannelIcon, channelLabel, channelOf, shortKey, useSessionNames } from "../names";
import { LiveTurn } from "./live-turn";
import { ActionButton, Card, Empty, ErrorLine, fmtTime } from "../ui";
import { TaintCard } from "./taint-card";
import { Transcript, type Message, type PendingApproval } from "./transcript";

interface Session {
  id: string;
  agent_id: string;
  key: string;
  title: string | null;
  channel: string;
  archived: boolean;
  created_at: number;
  parent_id: string | null;
  successor_id: string | null;
  model_override: string | null;
  message_count: number;
}
interface Lineage {
  backward: { id: string; created_at: number }[];
  forward: { id: string; created_at: number }[];
  summaries: {
    id: number;
    summary: string;
    tokens_before: number;
    tokens_after: number;
    created_at: number;
  }[];
}

/** Every message of a session, page by page (500 a page, up to 40 pages), oldest first. */
async function allMessages(base: string): Promise<{ messages: Message[]; truncated: boolean }> {
  const messages: Message[] = [];
  let after: number | null = 0;
  for (let i = 0; i < 40 && after !== null; i++) {
    const page: { messages: Message[]; next_after: number | null } = await api(
      `${base}/messages?limit=500&after=${after}`,
    );
    messages.push(...page.messages);
    after = page.next_after;
  }
  return { messages, truncated: after !== null };
}

export function SessionView(props: { agent: string; id: string }) {
  const base = `/api/agents/${encodeURIComponent(props.agent)}/sessions/${encodeURIComponent(props.id)}`;
  const s = useLoad(() => api<Session>(base), [base]);
  const msgs = useLoad(() => allMessages(base), [base]);
  const lineage = useLoad(() => api<Lineage>(`${base}/lineage`), [base]);
  useReloadOn(msgs, ["session.changed", "chat"]);
  useReloadOn(s, ["session.changed"]);
  const [model, setModel] = useState("");
  const sess = s.data;
  const link = (id: string): string =>
    `#/sessions/${encodeURIComponent(props.agent)}/${encodeURIComponent(id)}`;
  // Approvals this session waits for: a tool call without a result is then waiting, not done.
  const approvals = useLoad(() => gateway.call<{ approvals: PendingApproval[] }>("approvals.list"), [base]);
  useReloadOn(approvals, ["chat", "session.changed"]);
  usePoll(approvals, 5000);
  const mine = sess ? (approvals.data?.approvals ?? []).filter((x) => x.sessionKey === sess.key) : [];
  const names = useSessionNames([props.id]);
  const wide = useWide();
  const channel = channelOf(sess?.key);
  return (
    <div class="grid">
      <p>
        <a href="#/sessions">← All sessions</a>
      </p>
      <ErrorLine error={s.error ?? msgs.error} />
      {sess && (
        <Card title={names.name(sess.id)?.title ?? sess.title ?? shortKey(sess.key)} id="session-head">
          <p class="sess-sub">
            <ChannelIcon channel={channel} /> {channelLabel(channel)} · {sess.agent_id} · {sess.message_count}{" "}
            messages
          </p>
          {/* The facts and actions fold away on a phone: the transcript is what is read there. */}
          <details class="sess-meta" open={wide}>
            <summary>Details and actions</summary>
            <dl class="facts">
              <dt>Key</dt>
              <dd>
                <code>{sess.key}</code>
              </dd>
              <dt>Agent</dt>
              <dd>{sess.agent_id}</dd>
              <dt>Started</dt>
              <dd>{fmtTime(sess.created_at)}</dd>
              <dt>Model</dt>
              <dd>{sess.model_override ?? "the agent's"}</dd>
              <dt>Lineage</dt>
              <dd id="lineage">
                {sess.parent_id ? <a href={link(sess.parent_id)}>← predecessor</a> : "first of its line"}
                {" · "}
                {sess.successor_id ? (
                  <a href={link(sess.successor_id)}>successor →</a>
                ) : sess.archived ? (
                  "archived"
                ) : (
                  "live"
                )}
                {lineage.data &&
                  lineage.data.backward.length + lineage.data.forward.length > 0 &&
                  ` · ${lineage.data.backward.length} before, ${lineage.data.forward.length} after`}
              </dd>
            </dl>
            {!sess.archived && (
              <div class="toolbar">
                <ActionButton
                  action={() => gateway.call("sessions.reset", { sessionKey: sess.key, reason: "console" })}
                  confirm="Start a new session for this key? The old one stays readable."
                >
                  Reset
                </ActionButton>
                <ActionButton
                  action={async () => {
                    await gateway.call("sessions.compact", { sessionKey: sess.key });
                    msgs.reload();
                    s.reload();
                  }}
                >
                  Compact
                </ActionButton>
                <ActionButton
                  danger
                  action={async () => {
                    await gateway.call("sessions.delete", { sessionKey: sess.key });
                    location.hash = "#/sessions";
                  }}
                  confirm="Delete this session and its messages?"
                >
                  Delete
                </ActionButton>
                <form class="inline" onSubmit={(e) => e.preventDefault()}>
                  <label for="model-in">Model</label>
                  <input
                    id="model-in"
                    value={model}
                    placeholder="provider/model"
                    title="a model for this session; empty: the agent's own"
                    onInput={(e) => setModel(e.currentTarget.value)}
                  />
                  <ActionButton
                    action={async () => {
                      await gateway.call("sessions.model", {
                        sessionKey: sess.key,
                        model: model.trim() || null,
                      });
                      s.reload();
                    }}
                  >
                    Set model
                  </ActionButton>
                </form>
              </div>
            )}
          </details>
        </Card>
      )}
      {sess && <TaintCard sessionId={sess.id} />}
      {lineage.data?.summaries.length ? (
        <Card title="Compaction summaries" id="summaries">
          {lineage.data.summaries.map((x) => (
            <details key={x.id}>
              <summary>
                {fmtTime(x.created_at)}: {x.tokens_before} → {x.tokens_after} tokens
              </summary>
              <pre class="wrap">{x.summary}</pre>
            </details>
          ))}
        </Card>
      ) : null}
      {sess && !sess.archived && <LiveTurn sessionKey={sess.key} />}
      <Card title="Transcript" id="transcript">
        {msgs.data?.truncated && <p class="warn-line">Showing the first 20,000 messages only.</p>}
        {msgs.data?.messages.length && sess ? (
          <Transcript
            messages={msgs.data.messages}
            approvals={mine}
            sessionKey={sess.key}
            canRetry={sess.key.split(":")[2] === "gateway" && !sess.archived}
            reload={() => {
              approvals.reload();
              msgs.reload();
            }}
          />
        ) : (
          <Empty>
            {msgs.loading
              ? "Loading the transcript…"
              : "No messages yet: the chat's messages, tool calls and answers will appear here."}
          </Empty>
        )}
      </Card>
    </div>
  );
}

/** True above the phone breakpoint (800 px), following the window as it resizes. */
function useWide(): boolean {
  const q = "(min-width: 801px)";
  const [wide, setWide] = useState(() => matchMedia(q).matches);
  useEffect(() => {
    const m = matchMedia(q);
    const on = (): void => setWide(m.matches);
    m.addEventListener("change", on);
    return () => m.removeEventListener("change", on);
  }, []);
  return wide;
}
