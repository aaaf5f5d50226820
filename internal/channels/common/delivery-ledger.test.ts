/**
 * Answers a crash kept from their chat: which ones the next run sends. Real SQLite (temp dir) with
 * the real session store; the adapter records what the chat platform would show.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import { SessionStore } from "../../session/session-store.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { DeliveryLedger } from "./delivery-ledger.js";
import { PreviewLedger } from "./preview-ledger.js";
import { StreamRelay } from "./stream-relay.js";
import { FakeChatPlatform } from "../../../test/fakes/chat-platform.js";

let core: TestCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

const opts = (): { mode: "edit"; editIntervalMs: number; showTools: boolean } => ({
  mode: "edit",
  editIntervalMs: 1000,
  showTools: false,
});

describe("DeliveryLedger", () => {
  it("after a restart sends only the stored answers that may never have arrived, once", async () => {
    const clock = new FakeClock(1_000_000);
    core = createTestCore({}, { clock });
    const db = core.db;
    const sessions = new SessionStore(db, () => clock.now());
    const platform = new FakeChatPlatform({ maxLength: 1000 });
    const before = new DeliveryLedger(db, "tg", () => clock.now(), clock.now());
    const previews = new PreviewLedger(db, "tg", () => clock.now(), clock.now());
    const key = (n: number): string => `agent:main:tg:dm:${n}`;
    const turn = (n: number, answer?: { content: string; status?: "ok" | "aborted" | "error" }): void => {
      const s = sessions.ensure(key(n), "main");
      sessions.append(s.id, { role: "user", content: `question ${n}`, requestId: `req-${n}` });
      before.opened(`req-${n}`, `c${n}`, key(n));
      if (answer)
        sessions.append(s.id, {
          role: "assistant",
          content: answer.content,
          status: answer.status ?? "ok",
          finishReason: "stop",
          requestId: `req-${n}`,
        });
    };
    // 1: answered and stored; the crash came before Telegram confirmed it (its draft preview is shown).
    turn(1, { content: "answer one" });
    previews.opened("c1", "c1/draft", key(1), clock.now());
    platform.shown.set("c1/draft", "answer o");
    // 2: the turn failed; its error text is the answer the user must see.
    turn(2, { content: "The model is unreachable.", status: "error" });
    // 3: the user stopped it: nothing to send.
    turn(3, { content: "partial", status: "aborted" });
    // 4: interrupted before any answer (the host resumes it; not this ledger's job).
    turn(4);
    // 5: delivered normally: its row is gone.
    turn(5, { content: "answer five" });
    before.closed("req-5");

    // The restart: a resumed turn answers 4 before the channel connects; that is not re-sent.
    await clock.advance(60_000);
    const bootAt = clock.now();
    await clock.advance(100);
    sessions.append(sessions.head(key(4))!.id, {
      role: "assistant",
      content: "resumed answer",
      finishReason: "stop",
      requestId: "req-4",
    });
    const after = new DeliveryLedger(db, "tg", () => clock.now(), bootAt);
    // A turn of the new run is current, not a leftover.
    after.opened("req-6", "c6", key(6));
    const relay = new StreamRelay(
      platform,
      clock,
      opts,
      undefined,
      new PreviewLedger(db, "tg", () => clock.now(), bootAt),
      after,
    );
    await relay.cleanupLeftovers();
    expect([...platform.shown.entries()].sort()).toEqual([
      ["c1/1", "answer one"],
      ["c2/2", "The model is unreachable."],
    ]);
    const rows = db.prepare<[], { request_id: string }>("SELECT request_id FROM chat_deliveries").all();
    expect(rows).toEqual([{ request_id: "req-6" }]);
    // Idempotent: a second pass sends nothing.
    await relay.cleanupLeftovers();
    expect(platform.shown.size).toBe(2);
  });
});
