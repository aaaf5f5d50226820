/**
 * A bound on each chat's backlog (issue 46): a chat that sends faster than its replies can go would
 * otherwise queue a turn, a reply stream and its timers per message, without end, until the heap cap
 * kills the daemon. At most `reliability.max_backlog_per_chat` messages of one chat (its scope:
 * channel, chat, topic) are admitted and not yet answered; a message beyond that is refused before
 * anything is stored, and the sender is told, never silently:
 *
 * - the first refused message of a spell gets a notice at once (one message, not one per refusal:
 *   a platform rate-limits sends, and a notice per message would be a second unbounded queue);
 * - when a turn of that chat ends with room again, the rest of the spell's refusals are counted in
 *   one follow-up, so the sender knows exactly how many to send again.
 *
 * Invariants: `entered - left` per scope never exceeds the bound; an admitted message is never
 * refused later (it is answered like any other); a scope's entry is dropped once it has nothing in
 * flight and nothing left to tell, so the map stays as small as the chats currently busy.
 */

/** A slot held by an admitted message until its reply went out. */
export interface BacklogSlot {
  /** Frees the slot; returns the refusals of this chat still to report (0 when none, or still full). */
  leave(): number;
}

/** The answer to {@link ChatBacklog.enter}. */
export type BacklogEntry =
  | { ok: true; slot: BacklogSlot }
  | { ok: false; /** The first refusal of a spell: tell the sender now. */ tell: boolean; waiting: number };

interface ScopeState {
  inFlight: number;
  /** Refused in the current spell. */
  refused: number;
  /** Of those, already told (the first one's notice). */
  told: number;
}

/** Per-chat backlog bound, one per inbound router. */
export class ChatBacklog {
  private scopes = new Map<string, ScopeState>();

  /** @param max the bound, read on every message so a config reload applies at once */
  constructor(private readonly max: () => number) {}

  /** Admits a message of `scope` when its backlog has room; refuses it otherwise. */
  enter(scope: string): BacklogEntry {
    let s = this.scopes.get(scope);
    if (!s) {
      s = { inFlight: 0, refused: 0, told: 0 };
      this.scopes.set(scope, s);
    }
    if (s.inFlight >= this.max()) {
      s.refused++;
      const tell = s.told === 0;
      if (tell) s.told = 1;
      return { ok: false, tell, waiting: s.inFlight };
    }
    s.inFlight++;
    const state = s;
    let left = false;
    return {
      ok: true,
      slot: {
        leave: () => {
          if (left) return 0;
          left = true;
          state.inFlight--;
          let report = 0;
          if (state.refused > 0 && state.inFlight < this.max()) {
            report = state.refused - state.told;
            state.refused = 0;
            state.told = 0;
          }
          if (state.inFlight === 0 && state.refused === 0) this.scopes.delete(scope);
          return report;
        },
      },
    };
  }

  /** Messages of `scope` admitted and not yet answered. */
  inFlight(scope: string): number {
    return this.scopes.get(scope)?.inFlight ?? 0;
  }
}

/** The notice for the first refused message of a spell. */
export function backlogNotice(waiting: number): string {
  return `I still have ${waiting} of your messages to answer, so I did not take this one, nor will I take more until I have caught up. Please send it again once I have answered.`;
}

/** The follow-up naming the other messages refused in the spell. */
export function backlogFollowUp(count: number): string {
  return `While I was catching up I did not take ${count} more ${count === 1 ? "message" : "messages"} you sent. Please send again what still matters.`;
}
