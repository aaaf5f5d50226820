/**
 * Previews left by a crash: which ones the next run deletes. Real SQLite (temp dir) with the real
 * session store; the adapter records what the chat platform would show (the network boundary).
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import { ZERO_USAGE } from "../../models/types.js";
import { SessionStore } from "../../session/session-store.js";
import { createTestCore, type TestCore } from "../../../test/helpers/core.js";
import { PreviewLedger } from "./preview-ledger.js";
import { StreamRelay } from "./stream-relay.js";
import { FakeChatPlatform } from "../../../test/fakes/chat-platform.js";

let core: TestCore | undefined;
afterEach(() => {
  core?.close();
  core = undefined;
});

describe("PreviewLedger", () => {
  it("deletes only previews a crash left mid-stream, never a finished or current one", async () => {
    const clock = new FakeClock(1_000_000);
    core = createTestCore({}, { clock });
    const sessions = new SessionStore(core.db, () => clock.now());
    const platform = new FakeChatPlatform();
    const opts = (): { mode: "edit"; editIntervalMs: number; showTools: boolean } => ({
      mode: "edit",
      editIntervalMs: 1000,
      showTools: false,
    });
    const relayA = new StreamRelay(
      platform,
      clock,
      opts,
      undefined,
      new PreviewLedger(core.db, "tg", () => clock.now()),
    );
    const stream = async (chat: string, key: string, finish?: string): Promise<void> => {
      const s = relayA.stream(chat, key);
      s.onEvent({ type: "text_delta", runId: "r", delta: `partial answer in ${chat}` });
      await clock.advance(10);
      if (finish !== undefined) {
        s.onEvent({ type: "turn_end", runId: "r", text: finish, finishReason: "stop", usage: ZERO_USAGE });
        await clock.advance(1000);
        await s.done;
      }
    };
    const k = (n: number): string => `agent:main:tg:dm:${n}`;
    for (let n = 1; n <= 4; n++) sessions.create(k(n), "main");
    // 1: cut mid-stream (the host will resume the turn and answer anew).
    await stream("c1", k(1));
    // 2: finished normally: its row is gone.
    await stream("c2", k(2), "the whole answer");
    // 3: the turn ended and the final edit was under way.
    await stream("c3", k(3));
    relayA.ledger?.finalizing("c3", "c3/3");
    // 4: the answer was stored, but the crash came before the channel heard turn_end.
    await stream("c4", k(4));
    await clock.advance(5);
    sessions.append(sessions.head(k(4))!.id, {
      role: "assistant",
      content: "stored final",
      finishReason: "stop",
    });
    expect(platform.shown.size).toBe(4);

    // The restart.
    await clock.advance(60_000);
    const relayB = new StreamRelay(
      platform,
      clock,
      opts,
      undefined,
      new PreviewLedger(core.db, "tg", () => clock.now(), clock.now()),
    );
    // The resumed turn of 1 already answered before the channel connected: still stale.
    await clock.advance(100);
    sessions.append(sessions.head(k(1))!.id, {
      role: "assistant",
      content: "resumed answer",
      finishReason: "stop",
    });
    // A stream of the new run is current, not a leftover.
    const live = relayB.stream("c5", k(1));
    live.onEvent({ type: "text_delta", runId: "r", delta: "streaming now" });
    await clock.advance(10);
    // Another channel's previews are its own business.
    new PreviewLedger(core.db, "dc", () => clock.now()).opened("x", "x/1", undefined, 0);

    expect(await relayB.cleanupLeftovers()).toBe(1);
    expect([...platform.shown.keys()].sort()).toEqual(["c2/2", "c3/3", "c4/4", "c5/5"]);
    const rows = core.db
      .prepare<[], { channel: string; chat: string }>("SELECT channel, chat FROM chat_previews ORDER BY chat")
      .all();
    expect(rows).toEqual(
      [
        { channel: "tg", chat: "c5" },
        { channel: "dc", chat: "x" },
      ].sort((a, b) => a.chat.localeCompare(b.chat)),
    );
    // Idempotent: nothing left to clean.
    expect(await relayB.cleanupLeftovers()).toBe(0);
  });

  it("rows of the same run are never leftovers, e.g. for a channel rebuilt by a hot reload", async () => {
    const clock = new FakeClock(1_000_000);
    core = createTestCore({}, { clock });
    const bootAt = clock.now();
    const before = new PreviewLedger(core.db, "tg", () => clock.now(), bootAt);
    before.opened("c1", "c1/1", "agent:main:tg:dm:1", clock.now());
    await clock.advance(5_000);
    // The rebuilt channel of the same process: the open preview belongs to a turn still streaming.
    expect(new PreviewLedger(core.db, "tg", () => clock.now(), bootAt).leftovers()).toEqual([]);
    // After a restart it is a leftover.
    expect(new PreviewLedger(core.db, "tg", () => clock.now(), clock.now()).leftovers()).toHaveLength(1);
  });
});
