/**
 * A session's transcript as it reads in the chat: the user's messages on the right, the assistant's
 * answers on the left as rendered markdown, tool calls folded in place with their state. A call that
 * waits for the owner carries Approve and Deny right there; a failed turn carries Retry (it sends the
 * question again, for the sessions the gateway may write to). Time, model and the trace link are a
 * quiet line under each message.
 */
import { gateway } from "../gateway";
import { md } from "../markdown";
import { ActionButton, Badge, When } from "../ui";
import { approvalAsk } from "./approval-ask";

/** A stored message (`GET …/messages`). */
export interface Message {
  id: number;
  role: string;
  content: string;
  status: string;
  tool_calls?: { id: string; name: string; arguments?: string }[] | null;
  tool_name?: string | null;
  tool_call_id?: string | null;
  model?: string | null;
  request_id?: string | null;
  created_at: number;
}

/** A pending approval of this session (`approvals.list`). */
export interface PendingApproval {
  id: string;
  kind: string;
  summary: string;
  sessionKey: string;
  choices?: string[];
}

/** The state of one tool call, from its stored result (or the lack of one). */
function callState(r: Message | undefined, waiting: boolean, open: boolean): [string, string] {
  if (r) return r.status === "error" ? ["error", "✗"] : ["ok", "✓"];
  if (waiting) return ["waiting", "○"];
  return open ? ["running", "…"] : ["no result", "–"];
}

/** Approve / Deny (and the standing choices) for one approval, inline. */
function ApprovalButtons(props: { a: PendingApproval; done: () => void }) {
  const { a } = props;
  const resolve = (decision: "approve" | "deny", scope?: string) => async () => {
    await gateway.call("approvals.resolve", { id: a.id, decision, ...(scope ? { scope } : {}) });
    props.done();
  };
  return (
    <div class="inline-approval" data-approval-inline={a.id}>
      <strong>{approvalAsk(a.kind, a.summary)}</strong>
      <pre class="wrap">{a.summary}</pre>
      <div class="toolbar">
        <ActionButton primary label={`approve ${a.id}`} action={resolve("approve")}>
          Approve
        </ActionButton>
        {(a.choices ?? []).map((c) => (
          <ActionButton key={c} label={`approve ${a.id} for ${c}`} action={resolve("approve", c)}>
            {c === "session" ? "Yes for this session" : "Yes for this host"}
          </ActionButton>
        ))}
        <ActionButton danger label={`deny ${a.id}`} action={resolve("deny")}>
          Deny
        </ActionButton>
      </div>
    </div>
  );
}

/** The transcript: messages oldest first, tool results folded into the call that asked for them. */
export function Transcript(props: {
  messages: Message[];
  approvals: PendingApproval[];
  /** The session's key (Retry sends to it) and whether the gateway may write to it. */
  sessionKey: string;
  canRetry: boolean;
  reload: () => void;
}) {
  const results = new Map<string, Message>();
  for (const m of props.messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const shown = props.messages.filter((m) => m.role !== "tool");
  // The question a failed turn answered: the last user message before it.
  const questionBefore = (i: number): string | undefined => {
    for (let j = i - 1; j >= 0; j--) if (shown[j]!.role === "user") return shown[j]!.content;
    return undefined;
  };
  // Inline approvals go on the last waiting call (one session asks one thing at a time).
  const lastWaiting = props.approvals.length
    ? [...shown].reverse().find((m) => m.tool_calls?.some((c) => !results.has(c.id)))?.id
    : undefined;
  return (
    <ol class="transcript chatlike">
      {shown.map((m, i) => (
        <Msg
          key={m.id}
          m={m}
          results={results}
          waiting={props.approvals.length > 0}
          approvals={m.id === lastWaiting ? props.approvals : []}
          retry={
            m.status === "error" && props.canRetry && i === shown.length - 1 ? questionBefore(i) : undefined
          }
          sessionKey={props.sessionKey}
          reload={props.reload}
        />
      ))}
    </ol>
  );
}

function Msg(props: {
  m: Message;
  results: Map<string, Message>;
  waiting: boolean;
  approvals: PendingApproval[];
  retry: string | undefined;
  sessionKey: string;
  reload: () => void;
}) {
  const { m } = props;
  const failed = m.status === "error";
  const who = m.role === "user" ? "user" : m.role === "system" ? "summary" : "assistant";
  return (
    <li class={`msg ${m.role}${failed ? " failed" : ""}`} data-status={m.status}>
      <span class="sr">{who}: </span>
      {m.role === "system" && <div class="sys-label">Summary of the earlier conversation</div>}
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
      {props.approvals.map((a) => (
        <ApprovalButtons key={a.id} a={a} done={props.reload} />
      ))}
      {props.retry !== undefined && (
        <div class="toolbar">
          <ActionButton
            label="retry this turn"
            action={async () => {
              await gateway.call("chat.send", { sessionKey: props.sessionKey, message: props.retry });
              props.reload();
            }}
          >
            ↻ Retry
          </ActionButton>
          <span class="muted">sends the question again</span>
        </div>
      )}
      <div class="meta">
        <When ms={m.created_at} />
        {m.model && <span class="meta-model"> · {m.model}</span>}
        {m.status !== "ok" && m.status !== "summary" && (
          <>
            {" "}
            <Badge state={failed ? "failed" : m.status} />
          </>
        )}
        {m.request_id && m.role === "assistant" && (
          <>
            {" · "}
            <a
              class="req"
              href={`#/traces/${encodeURIComponent(m.request_id)}`}
              title={`request ${m.request_id}`}
            >
              trace
            </a>
          </>
        )}
      </div>
    </li>
  );
}
