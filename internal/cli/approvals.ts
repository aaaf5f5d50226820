/**
 * `familiar approvals [list]`, `familiar approvals approve <id>` and `familiar approvals deny <id>`:
 * the owner settles approval requests from the terminal, whichever chat they were sent to. The CLI
 * connects as an owner-role client (it holds the token from the owner's 0600 file).
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
  expiresAt: number;
}

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
  action: "list" | "approve" | "deny" | "grants" | "revoke",
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
        for (const a of approvals)
          out(
            `${safeLine(a.id)}  ${safeLine(a.kind)} via ${safeLine(a.replyTarget)}, expires ${localTime(a.expiresAt)}\n  ${safeText(a.summary).replace(/\n/g, "\n  ")}\n`,
          );
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
      }),
    );
    out(`${r.decision} ${r.id}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`familiar approvals: ${(err as Error).message}\n`);
    return 1;
  }
}
