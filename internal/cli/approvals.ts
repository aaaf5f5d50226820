/**
 * `familiar approvals [list]`, `familiar approvals show <id>`, `familiar approvals approve <id>` and
 * `familiar approvals deny <id>`: the owner reads and settles approval requests from the terminal,
 * whichever chat they were sent to. The CLI connects as an owner-role client (it holds the token from
 * the owner's 0600 file). Everything a stranger or a model could have written is escaped for the
 * terminal (terminal-text.ts): `show` prints the whole payload, so that is what an escape would hit.
 */
import { safeLine, safeText } from "./terminal-text.js";
import { GatewayClient } from "../gateway/client.js";
import { connectAsOwner } from "./owner-client.js";
import { localTime } from "./cli-format.js";

export interface ApprovalsOptions {
  config: string;
  url?: string;
  token?: string;
  json?: boolean;
  /** approve: once (default), host (target) or session. */
  scope?: string;
  /** approve/deny: only when the request still shows the payload of this sha256 (`show` prints it). */
  hash?: string;
}

interface GrantRow {
  id: string;
  sessionKey: string;
  sink: string;
  target: string;
  scope: string;
  createdAt: number;
  expiresAt: number | null;
}

interface Pending {
  id: string;
  kind: string;
  summary: string;
  replyTarget: string;
  sessionKey: string;
  expiresAt: number;
  payload?: string;
  payloadHash?: string;
  text?: string;
  omitted?: number;
}

/** Characters of a payload `list` prints before pointing at `show`. */
const LIST_PAYLOAD = 300;

async function withOwner<T>(opts: ApprovalsOptions, fn: (c: GatewayClient) => Promise<T>): Promise<T> {
  const c = await connectAsOwner(opts, "familiar-approvals");
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

/** Runs `list` (no id) or settles `id`; returns the exit code. */
export async function approvalsCommand(
  action: "list" | "show" | "approve" | "deny" | "grants" | "revoke",
  id: string | undefined,
  opts: ApprovalsOptions,
  out: (s: string) => void = (s) => process.stdout.write(s),
): Promise<number> {
  try {
    if (action === "list") {
      const { approvals } = await withOwner(opts, (c) =>
        c.request<{ approvals: Pending[] }>("approvals.list", {}),
      );
      if (opts.json) out(JSON.stringify(approvals, null, 2) + "\n");
      else if (approvals.length === 0) out("no pending approvals\n");
      else
        for (const a of approvals) {
          const body = a.payload === undefined ? a.summary : `${a.summary}\n${cut(a.payload, a.id)}`;
          out(
            `${safeLine(a.id)}  ${safeLine(a.kind)} via ${safeLine(a.replyTarget)}, expires ${localTime(a.expiresAt)}\n  ${safeText(body).replace(/\n/g, "\n  ")}\n`,
          );
        }
      return 0;
    }
    if (action === "grants") {
      const { grants } = await withOwner(opts, (c) =>
        c.request<{ grants: GrantRow[] }>("approvals.grants", {}),
      );
      if (opts.json) out(JSON.stringify(grants, null, 2) + "\n");
      else if (grants.length === 0) out("no containment grants\n");
      else
        for (const g of grants)
          out(
            `${g.id}  ${g.sink} ${g.scope === "session" ? "(whole session)" : g.target}  ${g.sessionKey}  ${g.expiresAt ? `until ${localTime(g.expiresAt)}` : "until the session ends"}\n`,
          );
      return 0;
    }
    if (!id) throw new Error(`usage: familiar approvals ${action} <id>`);
    if (action === "show") {
      const { approval: a } = await withOwner(opts, (c) =>
        c.request<{ approval: Pending }>("approvals.show", { id }),
      );
      if (opts.json) out(JSON.stringify(a, null, 2) + "\n");
      else
        out(
          `${safeLine(a.id)}  ${safeLine(a.kind)} via ${safeLine(a.replyTarget)} (session ${safeLine(a.sessionKey)}), expires ${localTime(a.expiresAt)}\n` +
            `sha256 ${safeLine(a.payloadHash ?? "")}\n\n${safeText(a.text ?? a.summary)}\n\n` +
            `To approve exactly this text: familiar approvals approve ${safeLine(a.id)} --hash ${safeLine(a.payloadHash ?? "")}\n`,
        );
      return 0;
    }
    if (action === "revoke") {
      await withOwner(opts, (c) => c.request("approvals.revoke", { id }));
      out(`revoked ${id}\n`);
      return 0;
    }
    const word = (opts.scope ?? "once").toLowerCase();
    const scope = word === "host" || word === "target" ? "target" : word;
    if (action === "approve" && scope !== "once" && scope !== "target" && scope !== "session")
      throw new Error(`usage: familiar approvals approve <id> [once|host|session] (got "${opts.scope}")`);
    const r = await withOwner(opts, (c) =>
      c.request<{ id: string; decision: string }>("approvals.resolve", {
        id,
        decision: action,
        ...(action === "approve" && scope !== "once" ? { scope } : {}),
        ...(opts.hash ? { hash: opts.hash } : {}),
      }),
    );
    out(`${r.decision} ${r.id}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`familiar approvals: ${(err as Error).message}\n`);
    return 1;
  }
}

/** A payload cut for `list`, saying how much is left and where the rest is. */
function cut(payload: string, id: string): string {
  if (payload.length <= LIST_PAYLOAD) return payload;
  const left = (payload.length - LIST_PAYLOAD).toLocaleString("en-US");
  return `${payload.slice(0, LIST_PAYLOAD)}\n[… ${left} more characters: familiar approvals show ${id}]`;
}
