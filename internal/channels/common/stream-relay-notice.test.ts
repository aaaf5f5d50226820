/**
 * Compaction notices reach chat users (Telegram, Discord) as their own quiet message, before the
 * answer; other notice kinds do not add messages. The adapter stands in for the chat platform.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { ZERO_USAGE } from "../../models/types.js";
import { StreamRelay, type ChatAdapter, type OutboundOptions } from "./stream-relay.js";

class Platform implements ChatAdapter {
  readonly limits = { maxLength: 4000 };
  sent: { text: string; opts: OutboundOptions }[] = [];
  failSends = 0;
  async send(_chat: string, text: string, opts: OutboundOptions): Promise<string> {
    if (this.failSends > 0) {
      this.failSends--;
      throw new Error("platform refused");
    }
    this.sent.push({ text, opts });
    return String(this.sent.length);
  }
  async edit(): Promise<void> {}
  async delete(): Promise<void> {}
  async typing(): Promise<void> {}
}

const notice = (kind: string, text: string): AgentEvent => ({ type: "notice", runId: "r", kind, text });
const end = (text: string): AgentEvent => ({
  type: "turn_end",
  runId: "r",
  text,
  finishReason: "stop",
  usage: ZERO_USAGE,
});

function setup() {
  const clock = new FakeClock();
  const p = new Platform();
  const relay = new StreamRelay(p, clock, () => ({ mode: "off", editIntervalMs: 1000, showTools: false }));
  return { clock, p, relay };
}

describe("StreamRelay notices", () => {
  it("sends a compaction notice as a quiet plain message before the answer", async () => {
    const { clock, p, relay } = setup();
    const s = relay.stream("c1");
    const line = "Compacted the conversation: summarised 40 earlier messages; ~22,350 -> ~5,812 tokens.";
    s.onEvent(notice("compaction", line));
    s.onEvent(notice("overflow_retry", "Context was too long for the model: compacted and retried."));
    s.onEvent(notice("echo_fallback", "echo"));
    s.onEvent(end("The answer."));
    await clock.advance(10);
    await s.done;
    expect(p.sent.map((m) => m.text)).toEqual([line, "The answer."]);
    expect(p.sent[0]!.opts).toMatchObject({ markdown: false, silent: true });
  });

  it("a notice the platform refuses does not stop the answer", async () => {
    const { clock, p, relay } = setup();
    p.failSends = 1;
    const s = relay.stream("c1");
    s.onEvent(notice("compaction", "Compacted the conversation: ..."));
    s.onEvent(end("Still answered."));
    await clock.advance(10);
    const out = await s.done;
    expect(p.sent.map((m) => m.text)).toEqual(["Still answered."]);
    expect(out.error).toBeUndefined();
  });
});
