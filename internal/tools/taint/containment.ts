/**
 * Prompt-injection containment (docs/security.md, "Prompt-injection containment"): a session that
 * has read untrusted text asks the owner before every sink, and egress goes through one gate.
 *
 * Invariants:
 * - every tool call of a turn passes {@link Containment.wrap}: with the session tainted, a sink
 *   (sinks.ts) runs only after a live grant or the owner's yes; "no", no answer in time, no chat to
 *   ask on, or an unattended run (cron, heartbeat) refuses it and nothing is sent;
 * - a result that brings untrusted text in (sources.ts) taints the session before the model sees it,
 *   and the tainted turn's parents (subagent call chain) with it;
 * - egress (`ctx.egress`, used by web_fetch and the sandbox proxy) allows an untainted session only
 *   the allowlist and a tainted one only granted hosts or a yes;
 * - an untainted session pays one map lookup per tool call and otherwise behaves as before.
 *
 * Over 300 lines on purpose: the wrap, the egress gate and the sink decision share one turn's taint
 * and grants; apart, each would hold half of the invariants above.
 */
import type { Config } from "../../config/schema.js";
import type { Clock } from "../../core/clock.js";
import { describeTaint, type TaintInput, type TaintSource } from "../../core/taint.js";
import type { Db } from "../../store/db.js";
import type { Logger } from "../../log/logger.js";
import type { ApprovalManager, GrantChoice } from "../approvals.js";
import { ToolError, type ToolContext, type ToolSet } from "../tool.js";
import { DataLabels } from "./data-labels.js";
import { LabelReader, type MessageReads } from "./label-reads.js";
import { egressVerdict } from "./egress-policy.js";
import { GrantStore } from "./grant-store.js";
import { MemoryTaint } from "./memory-taint.js";
import { classifySink, type Sink, type SinkEnv } from "./sinks.js";
import { visibleLine, visibleText } from "../../core/visible-text.js";
import { payloadHash, shownPayload } from "../approval-text.js";

/** The kind of every containment question (part of the hash an answer is bound to). */
const KIND = "tainted conversation";

/** The question's payload for a sink: the action, then the whole payload. */
function questionPayload(sink: Sink): string {
  return `It now wants to ${sink.action}:\n${sink.payload}`;
}
import { classifySource } from "./sources.js";
import { TaintStore } from "./taint-store.js";

/** What a turn tells the guard about itself (from its InboundMessage). */
export interface TurnInfo {
  channel: string;
  sessionKey: string;
  agentId?: string | undefined;
  replyTarget?: string | undefined;
  parentRequestId?: string | undefined;
  taint?: readonly TaintInput[] | undefined;
  /** Stored things the message comes from (InboundMessage.reads). */
  reads?: MessageReads | undefined;
}

/** A containment event for the trace. */
export interface ContainmentNote {
  kind: "taint" | "approval";
  name: string;
  meta: Record<string, unknown>;
  durationMs?: number; // an approval the owner was asked for: how long the answer took
}

export interface ContainmentDeps {
  db: Db;
  clock: Clock;
  config: () => Config;
  logger: Logger;
  approvals: Pick<ApprovalManager, "requestDetailed">;
  /** Reports a refusal of an unattended run to the owner (`last` = where the owner last wrote). */
  deliver: (target: string, text: string) => Promise<void>;
}

/** Channels of runs nobody watches: a sink there is refused at once and reported. */
const UNATTENDED = new Set(["cron", "heartbeat"]);
/** Requests remembered for the subagent chain (parents outlive children; bounded). */
const MAX_TURNS = 2000;

export class Containment {
  readonly taint: TaintStore;
  readonly grants: GrantStore;
  readonly memory: MemoryTaint;
  readonly labels: DataLabels;
  /** What labels mean for a reader (a prompt, a message, a tool's reads, a clean command). */
  readonly reads: LabelReader;
  /** Trace writer (set by the agent host). */
  onNote: ((requestId: string, note: ContainmentNote) => void) | undefined;
  /** Whether an agent has sink tools (set by the agent host, which knows the agents). */
  agentHasSinks: (agentId: string | undefined) => boolean = () => true;
  private turns = new Map<string, { sessionId: string; parent: string | undefined; agentId: string }>();
  /** The ids in `turns`, oldest at `next` once full: MAX_TURNS slots, reused in order. */
  private order: (string | undefined)[] = [];
  private next = 0;

  constructor(private deps: ContainmentDeps) {
    const now = (): number => deps.clock.now();
    this.taint = new TaintStore(deps.db, now);
    this.grants = new GrantStore(deps.db, now);
    this.memory = new MemoryTaint(deps.db, now);
    this.labels = new DataLabels(deps.db, now);
    this.reads = new LabelReader(deps.db, this.labels, this.taint);
  }

  enabled(): boolean {
    return this.deps.config().containment.enabled;
  }

  /** The session's taint sources, oldest first (empty: clean). */
  sourcesOf(sessionId: string): readonly TaintSource[] {
    return this.taint.sources(sessionId);
  }

  /**
   * A message was stored (inside the host's admission commit): records its own taint, what a
   * subagent inherits from the turn that started it, and tagged memory the prompt will carry.
   */
  admitted(sessionId: string, requestId: string, msg: TurnInfo): void {
    this.track(requestId, sessionId, msg.parentRequestId, msg.agentId ?? "");
    if (!this.enabled() || !sessionId) return;
    const inputs: TaintInput[] = [...(msg.taint ?? [])];
    const parent = msg.parentRequestId ? this.turns.get(msg.parentRequestId) : undefined;
    if (parent)
      for (const s of this.taint.sources(parent.sessionId))
        inputs.push({ kind: "inherited", detail: `${msg.parentRequestId}: ${describeTaint(s)}` });
    inputs.push(...this.reads.prompt(), ...this.reads.message(msg.reads));
    if (inputs.length) this.taint.add(sessionId, inputs.slice(0, 20), requestId);
  }

  private track(requestId: string, sessionId: string, parent: string | undefined, agentId: string): void {
    if (this.turns.has(requestId)) return;
    // The oldest is found in a ring of the ids, not by iterating the map: a Map that is deleted
    // from the front keeps its holes until it rehashes, and its first key costs a scan over them.
    const oldest = this.order[this.next];
    if (oldest !== undefined) this.turns.delete(oldest);
    this.order[this.next] = requestId;
    this.next = (this.next + 1) % MAX_TURNS;
    this.turns.set(requestId, { sessionId, parent, agentId });
  }

  /** Records new taint for a session and the parents of its turn (a tainted subagent's answer). */
  private addTaint(sessionId: string, requestId: string, inputs: readonly TaintInput[]): TaintSource[] {
    const added = this.taint.add(sessionId, inputs, requestId);
    for (const a of added)
      this.onNote?.(requestId, { kind: "taint", name: `tainted: ${a.kind}`, meta: { ...a } });
    let child = this.turns.get(requestId);
    for (let hops = 0; child?.parent && added.length && hops < 16; hops++) {
      const parent = this.turns.get(child.parent);
      if (!parent || parent.sessionId === sessionId) break;
      const detail = `${child.agentId || "subagent"} ${describeTaint(added[0]!)}`;
      const up = this.taint.add(parent.sessionId, [{ kind: "tainted_subagent", detail }], child.parent);
      for (const a of up)
        this.onNote?.(child.parent, { kind: "taint", name: `tainted: ${a.kind}`, meta: { ...a } });
      child = parent;
    }
    return added;
  }

  /** The agent's tool set with containment around every call (see the module invariants). */
  wrap(inner: ToolSet, turn: TurnInfo): ToolSet {
    // An ephemeral turn has no stored session: its taint lives as long as the turn. The memory
    // flush before a compaction is one, reading the compacted session: it carries that taint.
    const flushOf = turn.channel === "compaction" ? this.taint.headOf(turn.sessionKey) : undefined;
    const local: TaintSource[] = [
      ...(flushOf ? this.taint.sources(flushOf) : []),
      ...(turn.taint ?? []).map((t) => ({ ...t, at: this.deps.clock.now() })),
    ];
    const names = inner.names?.bind(inner);
    return {
      // Everything but execute is the inner set's (deferred tools included).
      specs: (loaded) => inner.specs(loaded),
      ...(names ? { names } : {}),
      execute: async (call, signal, ctx) => {
        if (!this.enabled()) return inner.execute(call, signal, ctx);
        this.track(ctx.requestId, ctx.sessionId, turn.parentRequestId, ctx.agentId);
        const sources = (): readonly TaintSource[] => {
          const stored = this.taint.sources(ctx.sessionId);
          return local.length ? [...stored, ...local] : stored;
        };
        // An exec the owner just approved (its command shown whole) is not asked again per host:
        // its connections follow the allowlist only.
        let approvedExec = false;
        const gated: ToolContext = {
          ...ctx,
          egress: (url) => this.egress(url, ctx, turn, approvedExec ? [] : sources(), signal),
          sandboxMasks: () => (sources().length ? [] : this.reads.masksForClean()),
        };
        const now = sources();
        if (now.length) {
          const env = {
            config: this.deps.config(),
            replyTarget: turn.replyTarget ?? ctx.replyTarget,
            agentHasSinks: this.agentHasSinks,
            strangerTainted: now.some((x) => x.kind === "non_owner_sender"),
          };
          const sink = classifySink(call.name, call.arguments, env);
          if (sink) {
            const d = await this.decide(sink, ctx, turn, now, signal);
            if (d.refusal) return { isError: true, content: d.refusal };
            // The yes is bound to the hash of what the question showed: the call that runs must be
            // that one (a changed argument, a re-read that classifies otherwise, is refused).
            const refusal =
              d.hash === undefined ? undefined : boundRefusal(call.name, call.arguments, env, d.hash);
            if (refusal) return { isError: true, content: refusal };
            approvedExec = sink.kind === "exec";
          }
        }
        const before = sources();
        const r = await inner.execute(call, signal, gated);
        const found = classifySource(call.name, call.arguments, r, this.deps.config());
        const inputs: TaintInput[] = found ? [found] : [];
        inputs.push(...this.reads.read(r.reads));
        if (inputs.length) {
          if (ctx.sessionId) this.addTaint(ctx.sessionId, ctx.requestId, inputs);
          else for (const i of inputs) local.push({ ...i, at: this.deps.clock.now() });
        }
        // What a tainted writer stored carries its taint, by identity (a stateless /v1 turn has no
        // session: the label names the turn's request instead).
        const writer = ctx.sessionId || flushOf || `request:${ctx.requestId}`;
        if (before.length && !r.isError) {
          for (const f of r.writes?.files ?? []) this.labels.add("file", f, writer, before);
          for (const j of r.writes?.jobs ?? []) this.labels.add("job", j, writer, before);
        }
        if (call.name === "memory_write" && !r.isError && before.length) {
          const path = r.writes?.files?.[0];
          const text = jsonField(call.arguments, "text");
          if (path && text) this.memory.tag(path, text, writer, before);
        }
        return r;
      },
    };
  }

  /** The egress gate of one call: allowlist when clean, grant or the owner's yes when tainted. */
  private async egress(
    url: URL,
    ctx: ToolContext,
    turn: TurnInfo,
    sources: readonly TaintSource[],
    signal?: AbortSignal,
  ): Promise<void> {
    if (!this.enabled()) return;
    const cfg = this.deps.config().containment.egress;
    const verdict = egressVerdict(url.hostname, sources.length > 0, cfg.allow_domains);
    if (verdict === "allow") return;
    if (verdict === "refuse")
      throw new ToolError(
        "EGRESS_REFUSED",
        `refused: ${url.hostname} is not in containment.egress.allow_domains (the owner can add it to config.yaml)`,
      );
    const sink: Sink = {
      kind: "egress",
      target: url.hostname.toLowerCase(),
      action: `connect to ${visibleLine(url.hostname)}`,
      payload: url.href,
    };
    const { refusal } = await this.decide(sink, ctx, turn, sources, signal);
    if (refusal) throw new ToolError("EGRESS_REFUSED", refusal);
  }

  /**
   * Asks for a sink of a tainted session: `refusal` is the text for the model, absent when allowed;
   * `hash` is the payload hash the owner's yes was given for (absent for a grant).
   */
  async decide(
    sink: Sink,
    ctx: ToolContext,
    turn: TurnInfo,
    sources: readonly TaintSource[],
    signal?: AbortSignal,
  ): Promise<{ refusal?: string; hash?: string }> {
    const lineage = this.taint.lineageOf(ctx.sessionId);
    const asked: { at?: number } = {}; // once asked, the note covers the wait (a bar on the timeline)
    const note = (decision: string, extra: Record<string, unknown> = {}): void =>
      this.onNote?.(ctx.requestId, {
        kind: "approval",
        name: `${sink.kind} ${decision}`,
        meta: { sink: sink.kind, target: sink.target, action: sink.action, decision, ...extra },
        ...(asked.at !== undefined ? { durationMs: Math.max(0, this.deps.clock.now() - asked.at) } : {}),
      });
    if (ctx.sessionId) {
      const grant = this.grants.match(lineage, sink.kind, sink.target);
      if (grant) {
        note("granted", { grant: grant.id });
        return {};
      }
    }
    const question = this.question(sink, ctx.sessionId, sources);
    if (UNATTENDED.has(turn.channel)) {
      note("refused", { reason: "unattended run" });
      // Nothing waits on a refusal, so the report carries the whole payload (escaped).
      const shown = shownPayload(question.payload);
      const report = `Refused in a ${turn.channel} run (${visibleLine(turn.sessionKey)}):\n${visibleText(question.intro)}\n${shown}\nUnattended runs never wait for approval; run it yourself if you want it.`;
      void this.deps.deliver(turn.replyTarget ?? "last", report).catch((err: unknown) => {
        this.deps.logger.warn({ err: (err as Error).message }, "containment: could not report a refusal");
      });
      return {
        refusal: `refused: this ${turn.channel} run read untrusted text, and unattended runs cannot ask the owner (${sink.action}). The owner was told.`,
      };
    }
    const cfg = this.deps.config().containment;
    const choices: GrantChoice[] = sink.target === "*" ? ["session"] : ["target", "session"];
    asked.at = this.deps.clock.now();
    // The wait gives the turn's slot back: turns waiting for the owner never hold every slot.
    const park = ctx.parkWhile?.bind(ctx) ?? (<R>(wait: () => Promise<R>): Promise<R> => wait());
    const ask = signal ?? ctx.signal;
    const out = await park(() =>
      this.deps.approvals.requestDetailed({
        replyTarget: ctx.approvalTarget ?? ctx.replyTarget ?? turn.replyTarget,
        sessionKey: ctx.sessionKey,
        summary: question.intro,
        payload: question.payload,
        requestId: ctx.requestId,
        ...(ask ? { signal: ask } : {}),
        kind: KIND,
        choices,
        targetLabel:
          sink.kind === "egress"
            ? `${sink.target} for ${cfg.host_grant_minutes} min`
            : `${sink.target} for ${cfg.host_grant_minutes} min`,
        timeoutS: cfg.approval_timeout_s,
      }),
    );
    const why = { reason: out.reason, ...(out.via ? { via: out.via } : {}) };
    if (out.decision !== "approved") {
      note(out.flooded ? "flooded" : out.withdrawn ? "withdrawn" : out.decision, why);
      return {
        refusal: `refused by containment: ${out.reason}. This conversation read untrusted text, so ${sink.action} needed the owner's yes.`,
      };
    }
    const scope = out.scope ?? "once";
    if (scope !== "once" && ctx.sessionId) {
      const g = this.grants.add({
        lineageId: lineage,
        sessionKey: ctx.sessionKey,
        sink: sink.kind,
        target: scope === "session" ? "*" : sink.target,
        scope,
        expiresAt: scope === "target" ? this.deps.clock.now() + cfg.host_grant_minutes * 60_000 : null,
      });
      note("approved", { scope, grant: g.id, ...why });
    } else note("approved", { scope: "once", ...why });
    return out.payloadHash !== undefined ? { hash: out.payloadHash } : {};
  }

  /**
   * The question's two parts: `intro` lists every taint source of the session, most recent first,
   * with how long ago each entered and how many there are; `payload` is the sink's action and its
   * whole payload (approval-text.ts cuts it for a chat and says by how much).
   */
  question(
    sink: Sink,
    sessionId: string,
    sources: readonly TaintSource[],
  ): { intro: string; payload: string } {
    const payload = questionPayload(sink);
    if (sources.length === 0) return { intro: "", payload };
    const lines = [...sources].reverse().map((s, i) => {
      const turns = this.taint.turnsSince(sessionId, s.at);
      const ago = turns === 0 ? "earlier in this turn" : turns === 1 ? "1 turn ago" : `${turns} turns ago`;
      return `${i + 1}. ${visibleLine(describeTaint(s))} (${ago})`;
    });
    const n = sources.length;
    const head =
      n === 1
        ? "This conversation read 1 untrusted source:"
        : `This conversation read ${n} untrusted sources, most recent first:`;
    return { intro: [head, ...lines].join("\n"), payload };
  }
}

/**
 * Why an approved call may not run: the call about to execute classifies to a payload whose hash is
 * not the one the owner's yes was given for. Undefined when it is the same.
 */
export function boundRefusal(
  name: string,
  rawArgs: string,
  env: SinkEnv,
  approved: string,
): string | undefined {
  const now = classifySink(name, rawArgs, env);
  const hash = now ? payloadHash(KIND, shownPayload(questionPayload(now))) : "";
  if (now && hash === approved) return undefined;
  return "refused by containment: the call to run is not the one the owner approved (its text changed after the question); nothing was run. Ask again if it is still wanted.";
}

function jsonField(raw: string, key: string): string | undefined {
  try {
    const v = (JSON.parse(raw) as Record<string, unknown>)[key];
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}
