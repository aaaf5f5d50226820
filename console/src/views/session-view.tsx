/** One session: its facts, lineage and summaries, actions, and the transcript with tool calls folded. */
import { useState } from "preact/hooks";
import { api, gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { ActionButton, Card, Empty, ErrorLine, fmtTime } from "../ui";
import { TaintCard } from "./taint-card";

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
interface ToolCall {
  id: string;
  name: string;
  arguments?: string;
}
interface Message {
  id: number;
  role: string;
  content: string;
  status: string;
  tool_calls?: ToolCall[] | null;
  tool_name?: string | null;
  tool_call_id?: string | null;
  model?: string | null;
  request_id?: string | null;
  created_at: number;
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
  const results = new Map<string, Message>();
  for (const m of msgs.data?.messages ?? [])
    if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  return (
    <div class="grid">
      <p>
        <a href="#/sessions">← All sessions</a>
      </p>
      <ErrorLine error={s.error ?? msgs.error} />
      {sess && (
        <Card title={sess.title ?? sess.key} id="session-head">
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
                  placeholder="provider/model (empty: agent's)"
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
      <Card title="Transcript" id="transcript">
        {msgs.data?.truncated && <p class="warn-line">Showing the first 20,000 messages only.</p>}
        {msgs.data?.messages.length ? (
          <ol class="transcript">
            {msgs.data.messages
              .filter((m) => m.role !== "tool")
              .map((m) => (
                <li key={m.id} class={`msg ${m.role}`} data-status={m.status}>
                  <div class="meta">
                    <strong>{m.role}</strong> · {fmtTime(m.created_at)}
                    {m.model && ` · ${m.model}`}
                    {m.status !== "ok" && ` · ${m.status}`}
                    {m.request_id && m.role === "assistant" && (
                      <>
                        {" · "}
                        <a href={`#/traces/${encodeURIComponent(m.request_id)}`}>trace</a>
                      </>
                    )}
                  </div>
                  {m.content && <div class="body">{m.content}</div>}
                  {m.tool_calls?.map((c) => {
                    const r = results.get(c.id);
                    return (
                      <details key={c.id} class="toolcall">
                        <summary>
                          {r?.status === "error" ? "✗" : "✓"} {c.name}
                        </summary>
                        <div class="muted">arguments</div>
                        <pre class="wrap">{c.arguments ?? ""}</pre>
                        <div class="muted">result</div>
                        <pre class="wrap">{r?.content ?? "(no result stored)"}</pre>
                      </details>
                    );
                  })}
                </li>
              ))}
          </ol>
        ) : (
          <Empty>{msgs.loading ? "Loading…" : "No messages."}</Empty>
        )}
      </Card>
    </div>
  );
}
