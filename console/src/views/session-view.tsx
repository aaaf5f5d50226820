/** One session: its facts, lineage and summaries, actions, and the transcript with tool calls folded. */
import { useState } from "preact/hooks";
import { api, gateway } from "../gateway";
import { usePoll, useLoad, useReloadOn } from "../hooks";
import { md } from "../markdown";
import { LiveTurn } from "./live-turn";
import { ActionButton, Badge, Card, Empty, ErrorLine, fmtTime, When } from "../ui";
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
  // Approvals this session waits for: a tool call without a result is then waiting, not done.
  const approvals = useLoad(
    () => gateway.call<{ approvals: { sessionKey: string }[] }>("approvals.list"),
    [base],
  );
  useReloadOn(approvals, ["chat", "session.changed"]);
  usePoll(approvals, 5000);
  const waitingHere = !!sess && !!approvals.data?.approvals.some((x) => x.sessionKey === sess.key);
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
        {msgs.data?.messages.length ? (
          <ol class="transcript">
            {msgs.data.messages
              .filter((m) => m.role !== "tool")
              .map((m) => (
                <Msg key={m.id} m={m} results={results} waiting={waitingHere} />
              ))}
          </ol>
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

/** The state of one tool call, from its stored result (or the lack of one). */
function callState(r: Message | undefined, waiting: boolean, open: boolean): [string, string] {
  if (r) return r.status === "error" ? ["error", "✗"] : ["ok", "✓"];
  if (waiting) return ["waiting", "○"];
  return open ? ["running", "…"] : ["no result", "–"];
}

/** One message: markdown body, its tool calls with their state, a failed turn with its error. */
function Msg(props: { m: Message; results: Map<string, Message>; waiting: boolean }) {
  const { m } = props;
  const failed = m.status === "error";
  return (
    <li class={`msg ${m.role}${failed ? " failed" : ""}`} data-status={m.status}>
      <div class="meta">
        <strong>{m.role === "system" ? "summary / system" : m.role}</strong> · <When ms={m.created_at} />
        {m.model && ` · ${m.model}`}
        {m.status !== "ok" && (
          <>
            {" "}
            <Badge state={m.status === "error" ? "failed" : m.status} />
          </>
        )}
        {m.request_id && m.role === "assistant" && (
          <>
            {" · "}
            <a
              class="req"
              href={`#/traces/${encodeURIComponent(m.request_id)}`}
              title="open this turn's trace"
            >
              trace {m.request_id.slice(0, 8)}
            </a>
          </>
        )}
      </div>
      {failed ? (
        <p class="error turn-error">
          {m.content || "The turn failed without a stored cause; open its trace."}
        </p>
      ) : (
        m.content && <div class="body md" dangerouslySetInnerHTML={{ __html: md(m.content) }} />
      )}
      {m.tool_calls?.map((c) => {
        const r = props.results.get(c.id);
        const [state, icon] = callState(r, props.waiting, m.status === "pending");
        return (
          <details key={c.id} class="toolcall" data-state={state}>
            <summary>
              <span class={`tc-icon ${state}`} aria-hidden="true">
                {icon}
              </span>{" "}
              {c.name} <Badge state={state === "waiting" ? "waiting for approval" : state} />
              {state === "error" && r && (
                <span class="error"> {r.content.split("\n")[0]?.slice(0, 160)}</span>
              )}
            </summary>
            <div class="muted">arguments</div>
            <pre class="wrap">{c.arguments ?? ""}</pre>
            <div class="muted">result</div>
            <pre class="wrap">
              {r?.content ??
                (state === "waiting" ? "(waiting for the owner's approval)" : "(no result stored)")}
            </pre>
          </details>
        );
      })}
    </li>
  );
}
