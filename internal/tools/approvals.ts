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
 *   request offered it; otherwise an approval covers this one call;
 * - the question shows the whole payload (approval-text.ts) and the outcome carries the sha256 of
 *   exactly what was shown; an answer that names a hash (the console, the CLI, the chat buttons and
 *   the web chat) settles the request only when it is that hash (a button: its first 12 hex digits);
 * - at most {@link MAX_OPEN_PER_SESSION} requests of one session are open: the next is denied at once
 *   (`flooded`), never delivered;
 * - a request whose turn ended (its `signal` aborted: stopped, timed out, shut down) is withdrawn:
 *   settled as denied, and every {@link ApprovalManager.onClosed} listener hears it (the chat edits
 *   away its buttons, the console and web chat drop the card).
 *
 * Over 300 lines on purpose: one request's whole life (ask, bind to a hash, park the turn, answer,
 * expire, withdraw, list) is one state machine; its text is in approval-text.ts.
 */
import { randomInt } from "node:crypto";
import {
  CHAT_PAYLOAD_LIMIT as CHAT_LIMIT,
  chatQuestion,
  fullQuestion,
  hashMatches,
  HASH_PREFIX_LENGTH,
  payloadHash,
  shownPayload,
} from "./approval-text.js";
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
  /**
   * The thing that runs or goes out, whole (a command, a message, a URL, a file list). When set,
   * `summary` is the question's intro (why the owner is asked); when absent, `summary` is the payload.
   */
  payload?: string;
  /** The turn asking: when it aborts (stopped, timed out), the request is withdrawn. */
  signal?: AbortSignal;
  /** The request id of the turn asking (for the trace and the console). */
  requestId?: string;
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
  /** The whole payload as shown (controls and bidi marks escaped). */
  payload: string;
  /** sha256 of kind + shown payload: what an answer is bound to. */
  payloadHash: string;
  /** The question with the whole payload (what `approvals show` prints). */
  text: string;
  /** Characters of the payload the chat question left out (0: it was shown whole). */
  omitted: number;
  requestId?: string;
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
  /** The hash of the payload the question showed (absent when nothing was asked). */
  payloadHash?: string;
  /** Refused at once: the session already had {@link MAX_OPEN_PER_SESSION} open questions. */
  flooded?: boolean;
  /** Withdrawn: the turn that asked ended before an answer. */
  withdrawn?: boolean;
}

/** Listener of closed requests (answered, expired, withdrawn, denied for a failed delivery). */
export type ApprovalClosedListener = (a: PendingApproval, outcome: ApprovalOutcome) => void;

interface Entry extends PendingApproval {
  settle: (o: ApprovalOutcome) => void;
  timer: TimerHandle;
  /** Removes the abort listener of the turn's signal. */
  unlisten: () => void;
}

/** Open questions one session may have; the next sink call is refused at once. */
export const MAX_OPEN_PER_SESSION = 3;

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
  private closedListeners: ApprovalClosedListener[] = [];

  constructor(private opts: ApprovalManagerOptions) {}

  /** Calls `fn` for every request that closes (the channels and the gateway withdraw the question). */
  onClosed(fn: ApprovalClosedListener): () => void {
    this.closedListeners.push(fn);
    return () => {
      this.closedListeners = this.closedListeners.filter((f) => f !== fn);
    };
  }

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
    if (input.signal?.aborted)
      return Promise.resolve({ decision: "denied", reason: "the turn ended before asking", withdrawn: true });
    const open = [...this.pending.values()].filter((e) => e.sessionKey === input.sessionKey).length;
    if (open >= MAX_OPEN_PER_SESSION)
      return Promise.resolve({
        decision: "denied",
        flooded: true,
        reason:
          `${open} questions of this conversation already wait for the owner (at most ` +
          `${MAX_OPEN_PER_SESSION}); not asked. Wait for their answers, or tell the owner in your reply what you wanted to do`,
      });
    const id = this.newId();
    const timeoutS = input.timeoutS ?? this.opts.timeoutS();
    const choices = input.choices ?? [];
    const now = this.opts.clock.now();
    const kind = input.kind ?? "action";
    const parts = {
      id,
      kind,
      intro: input.payload === undefined ? "" : input.summary,
      payload: input.payload ?? input.summary,
      choices,
      targetLabel: input.targetLabel,
      timeoutS,
    };
    const shown = shownPayload(parts.payload);
    const hash = payloadHash(kind, shown);
    const text = chatQuestion(parts);
    return new Promise<ApprovalOutcome>((resolve) => {
      const timer = this.opts.clock.setTimeout(() => {
        this.finish(id, { decision: "expired", reason: `no answer within ${timeoutS}s` });
      }, timeoutS * 1000);
      timer.unref?.();
      const signal = input.signal;
      const onAbort = (): void => {
        this.finish(id, {
          decision: "denied",
          reason: "withdrawn: the turn that asked ended before an answer",
          withdrawn: true,
        });
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.pending.set(id, {
        id,
        replyTarget: target,
        sessionKey: input.sessionKey,
        summary: input.summary,
        kind,
        createdAt: now,
        expiresAt: now + timeoutS * 1000,
        choices,
        payload: shown,
        payloadHash: hash,
        text: fullQuestion(parts),
        omitted: Math.max(0, shown.length - CHAT_LIMIT),
        ...(input.requestId ? { requestId: input.requestId } : {}),
        settle: resolve,
        timer,
        unlisten: () => signal?.removeEventListener("abort", onAbort),
      });
      const buttons = choices.map((c) => (c === "target" ? ("host" as const) : ("session" as const)));
      this.opts.channels
        .deliver(target, text, {
          approvalId: id,
          approvalHash: hash.slice(0, HASH_PREFIX_LENGTH),
          markdown: false,
          ...(buttons.length ? { approvalChoices: buttons } : {}),
          ...(shown.length > CHAT_LIMIT ? { approvalShowAll: true } : {}),
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
   * Settles a pending request. With `fromTarget`, only the chat the request was sent to may answer;
   * with `hash`, only when it is the hash of the payload the question showed. Returns false for
   * unknown, already settled or foreign ids, and for a hash that does not match.
   */
  resolve(
    id: string,
    decision: "approved" | "denied",
    opts: { fromTarget?: string; scope?: ApprovalScope; hash?: string } = {},
  ): boolean {
    const key = id.trim().toLowerCase();
    if (this.access(key, opts.fromTarget) !== "ok") return false;
    const entry = this.pending.get(key);
    // An answer given for another text (the console showed a payload that is not this one) settles
    // nothing: a yes is bound to exactly what was shown.
    if (opts.hash !== undefined && !(entry && hashMatches(entry.payloadHash, opts.hash))) return false;
    const offered = entry?.choices ?? [];
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
    return [...this.pending.values()].map((e) => publicOf(e));
  }

  /** One pending request with its whole payload, or undefined when unknown or settled. */
  show(id: string): PendingApproval | undefined {
    const e = this.pending.get(id.trim().toLowerCase());
    return e ? publicOf(e) : undefined;
  }

  /** Withdraws every open request of a turn (it ended); returns how many. */
  withdrawTurn(requestId: string): number {
    let n = 0;
    for (const e of [...this.pending.values()])
      if (e.requestId === requestId)
        n += this.finish(e.id, {
          decision: "denied",
          reason: "withdrawn: the turn that asked ended before an answer",
          withdrawn: true,
        })
          ? 1
          : 0;
    return n;
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
    e.unlisten();
    this.opts.logger?.info({ id, kind: e.kind, decision: outcome.decision }, "approval settled");
    const full: ApprovalOutcome = { ...outcome, payloadHash: e.payloadHash };
    for (const fn of this.closedListeners)
      try {
        fn(publicOf(e), full);
      } catch (err) {
        this.opts.logger?.warn({ id, err: (err as Error).message }, "approval close listener failed");
      }
    e.settle(full);
    return true;
  }
}

function publicOf(e: Entry): PendingApproval {
  const { settle: _s, timer: _t, unlisten: _u, ...p } = e;
  return p;
}
