/**
 * Approval requests: a tool asks the owner, on the channel the request came from, before doing
 * something risky (an exec outside the allow list). Channels resolve requests from `/approve <id>`,
 * `/deny <id>` or their buttons.
 *
 * Invariants:
 * - `request` always settles: approved, denied, or expired after `tools.exec.approval_timeout_s`
 *   (on the injected clock); with no reply target or a failed delivery it is denied at once;
 * - an id resolves at most once; later `resolve` calls return false;
 * - an id is 14 symbols of a 31-letter alphabet drawn with `crypto.randomInt` (unbiased, ~69 bits),
 *   so nobody guesses a pending id;
 * - only the chat a request was sent to (`fromTarget` equal to its reply target), or the owner
 *   (no `fromTarget`: the owner's CLI or an owner-role gateway client), settles it;
 * - a standing answer (`scope` "target" or "session", containment grants) is accepted only when the
 *   request offered it; otherwise an approval covers this one call.
 */
import { randomInt } from "node:crypto";
import type { Clock, TimerHandle } from "../core/clock.js";
import type { Logger } from "../log/logger.js";
import type { Outbox } from "../core/outbox.js";
import type { ApprovalDecision } from "./tool.js";

/** What ApprovalManager needs from the Outbox. */
export type ApprovalDelivery = Pick<Outbox, "deliver">;

export interface ApprovalRequestInput {
  /** Channel target of the originating chat (`telegram:123`). */
  replyTarget?: string | undefined;
  sessionKey: string;
  /** What will happen, e.g. the shell command. */
  summary: string;
  kind?: string;
  /**
   * Standing answers the owner may give besides "yes once" (containment): `target` = "yes for
   * {@link targetLabel}" (a host for an hour, a chat), `session` = "yes for this session".
   */
  choices?: readonly GrantChoice[];
  /** What a `target` answer covers, in the question ("evil.example for 60 min"). */
  targetLabel?: string;
  /** Overrides `timeoutS` for this request. */
  timeoutS?: number;
}

/** A standing answer a request may offer. */
export type GrantChoice = "target" | "session";

/** How far an approval reaches: this call, the offered target, or the whole session. */
export type ApprovalScope = "once" | GrantChoice;

/** A pending request as listed by {@link ApprovalManager.list}. */
export interface PendingApproval {
  id: string;
  replyTarget: string;
  sessionKey: string;
  summary: string;
  kind: string;
  createdAt: number;
  expiresAt: number;
  /** Standing answers offered besides "once". */
  choices: readonly GrantChoice[];
}

/** The settled outcome with a reason for logs and the model. */
export interface ApprovalOutcome {
  decision: ApprovalDecision;
  reason: string;
  /** For an approval: how far it reaches (default once). */
  scope?: ApprovalScope;
  /**
   * Where the answer came from: the chat the question was sent to (`telegram:123`), or absent for
   * the owner's console or CLI. Only set when someone answered (not on expiry or a failed delivery).
   */
  via?: string;
}

interface Entry extends PendingApproval {
  settle: (o: ApprovalOutcome) => void;
  timer: TimerHandle;
}

export interface ApprovalManagerOptions {
  clock: Clock;
  channels: ApprovalDelivery;
  /** Seconds before a request expires (read on every request so hot reloads apply). */
  timeoutS: () => number;
  logger?: Logger;
}

const ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
/** 14 symbols x log2(31) = 69 bits of entropy. */
const ID_LENGTH = 14;

/** Who may settle a pending id: `ok`, `unknown` (absent or settled) or `foreign` (another chat's). */
export type ApprovalAccess = "ok" | "unknown" | "foreign";

export class ApprovalManager {
  private pending = new Map<string, Entry>();

  constructor(private opts: ApprovalManagerOptions) {}

  private newId(): string {
    for (;;) {
      let id = "";
      for (let i = 0; i < ID_LENGTH; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
      if (!this.pending.has(id)) return id;
    }
  }

  /** Asks the owner; resolves with the decision (never rejects, never hangs past the timeout). */
  async request(input: ApprovalRequestInput): Promise<ApprovalDecision> {
    return (await this.requestDetailed(input)).decision;
  }

  /** Like {@link request}, with the reason (no target, delivery failed, owner denied, expired). */
  requestDetailed(input: ApprovalRequestInput): Promise<ApprovalOutcome> {
    const target = input.replyTarget;
    if (!target || target === "none")
      return Promise.resolve({
        decision: "denied",
        reason: "no channel to ask the owner on (this session has no reply target)",
      });
    const id = this.newId();
    const timeoutS = input.timeoutS ?? this.opts.timeoutS();
    const choices = input.choices ?? [];
    const now = this.opts.clock.now();
    const kind = input.kind ?? "action";
    return new Promise<ApprovalOutcome>((resolve) => {
      const timer = this.opts.clock.setTimeout(() => {
        this.finish(id, { decision: "expired", reason: `no answer within ${timeoutS}s` });
      }, timeoutS * 1000);
      timer.unref?.();
      this.pending.set(id, {
        id,
        replyTarget: target,
        sessionKey: input.sessionKey,
        summary: input.summary,
        kind,
        createdAt: now,
        expiresAt: now + timeoutS * 1000,
        choices,
        settle: resolve,
        timer,
      });
      const text =
        `Approval needed (${kind}):\n${input.summary}\n\n` +
        (choices.length === 0
          ? `Reply /approve ${id} to allow or /deny ${id} to refuse (expires in ${formatSeconds(timeoutS)}).`
          : [
              `Reply /approve ${id} to allow this once,`,
              ...(choices.includes("target")
                ? [`/approve ${id} host to allow ${input.targetLabel ?? "this target"},`]
                : []),
              ...(choices.includes("session")
                ? [`/approve ${id} session to allow this for the rest of the session,`]
                : []),
              `or /deny ${id} to refuse (no answer within ${formatSeconds(timeoutS)} counts as no).`,
            ].join("\n"));
      const buttons = choices.map((c) => (c === "target" ? ("host" as const) : ("session" as const)));
      this.opts.channels
        .deliver(target, text, {
          approvalId: id,
          markdown: false,
          ...(buttons.length ? { approvalChoices: buttons } : {}),
        })
        .catch((err: unknown) => {
          this.opts.logger?.warn(
            { id, target, err: (err as Error).message },
            "approval request not delivered",
          );
          this.finish(id, {
            decision: "denied",
            reason: `could not ask the owner on ${target}: ${(err as Error).message}`,
          });
        });
    });
  }

  /**
   * Settles a pending request. With `fromTarget`, only the chat the request was sent to may answer.
   * Returns false for unknown, already settled or foreign ids.
   */
  resolve(
    id: string,
    decision: "approved" | "denied",
    opts: { fromTarget?: string; scope?: ApprovalScope } = {},
  ): boolean {
    const key = id.trim().toLowerCase();
    if (this.access(key, opts.fromTarget) !== "ok") return false;
    const offered = this.pending.get(key)?.choices ?? [];
    // A standing answer the request did not offer is refused, not silently narrowed to "once".
    if (decision === "approved" && opts.scope && opts.scope !== "once" && !offered.includes(opts.scope))
      return false;
    return this.finish(key, {
      decision,
      reason: decision === "approved" ? "approved by the owner" : "denied by the owner",
      ...(decision === "approved" ? { scope: opts.scope ?? "once" } : {}),
      ...(opts.fromTarget !== undefined ? { via: opts.fromTarget } : {}),
    });
  }

  /** The standing answers a pending request offers (empty when unknown or none). */
  choicesOf(id: string): readonly GrantChoice[] {
    return this.pending.get(id.trim().toLowerCase())?.choices ?? [];
  }

  /** Whether `fromTarget` (undefined: the owner) may settle `id` now. */
  access(id: string, fromTarget?: string): ApprovalAccess {
    const e = this.pending.get(id.trim().toLowerCase());
    if (!e) return "unknown";
    return fromTarget === undefined || fromTarget === e.replyTarget ? "ok" : "foreign";
  }

  /** Pending requests, oldest first. */
  list(): PendingApproval[] {
    return [...this.pending.values()].map(({ settle: _s, timer: _t, ...p }) => p);
  }

  /** Denies everything pending (daemon shutdown). */
  denyAll(reason = "the daemon is shutting down"): void {
    for (const id of [...this.pending.keys()]) this.finish(id, { decision: "denied", reason });
  }

  private finish(id: string, outcome: ApprovalOutcome): boolean {
    const e = this.pending.get(id);
    if (!e) return false;
    this.pending.delete(id);
    this.opts.clock.clearTimeout(e.timer);
    this.opts.logger?.info({ id, kind: e.kind, decision: outcome.decision }, "approval settled");
    e.settle(outcome);
    return true;
  }
}

function formatSeconds(s: number): string {
  if (s % 60 === 0 && s >= 60) return `${s / 60} min`;
  return `${s}s`;
}
