/**
 * The relay's pacing and final-delivery rules on a FakeClock. The adapter here stands in for the
 * chat platform (the network boundary) and records what the platform would show.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../core/clock.js";
import { APPROVAL_ANSWERED_NOTICE, APPROVAL_WAIT_NOTICE, type AgentEvent } from "../../core/agent-events.js";
import { ZERO_USAGE } from "../../models/types.js";
import { StreamRelay, type ChatAdapter, type OutboundOptions } from "./stream-relay.js";

class PlatformRecorder implements ChatAdapter {
  readonly limits = { maxLength: 100 };
  msgs = new Map<string, string>();
  log: { op: string; at: number; id?: string; text?: string }[] = [];
  failEdits = false;
  private seq = 0;
  constructor(private clock: FakeClock) {}
  async send(_chat: string, text: string, _o: OutboundOptions): Promise<string> {
    const id = String(++this.seq);
    this.msgs.set(id, text);
    this.log.push({ op: "send", at: this.clock.now(), id, text });
    return id;
  }
  async edit(_chat: string, id: string, text: string): Promise<void> {
    this.log.push({ op: "edit", at: this.clock.now(), id, text });
    if (this.failEdits) throw new Error("edit refused");
    this.msgs.set(id, text);
  }
  async delete(_chat: string, id: string): Promise<void> {
    this.log.push({ op: "delete", at: this.clock.now(), id });
    this.msgs.delete(id);
  }
  async typing(): Promise<void> {
    this.log.push({ op: "typing", at: this.clock.now() });
  }
}

const end = (text: string, finishReason: "stop" | "error" = "stop"): AgentEvent => ({
  type: "turn_end",
  runId: "r",
  text,
  finishReason,
  usage: ZERO_USAGE,
});

function setup(mode: "edit" | "off" = "edit") {
  const clock = new FakeClock();
  const p = new PlatformRecorder(clock);
  const relay = new StreamRelay(p, clock, () => ({ mode, editIntervalMs: 1000, showTools: true }));
  return { clock, p, relay };
}

describe("StreamRelay", () => {
  it("creates one preview, edits at most once per interval, and finishes with the full text", async () => {
    const { clock, p, relay } = setup();
    const s = relay.stream("c1");
    s.onEvent({
      type: "turn_start",
      runId: "r",
      sessionKey: "k",
      sessionId: "s",
      agentId: "a",
      requestId: "q",
    });
    for (let i = 0; i < 30; i++) {
      s.onEvent({ type: "text_delta", runId: "r", delta: `w${i} ` });
      await clock.advance(100);
    }
    s.onEvent(end(Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ")));
    await clock.advance(2000);
    const out = await s.done;
    const edits = p.log.filter((l) => l.op === "edit");
    for (let i = 1; i < edits.length; i++)
      expect(edits[i]!.at - edits[i - 1]!.at).toBeGreaterThanOrEqual(1000);
    expect(p.log.filter((l) => l.op === "send")).toHaveLength(2); // the preview (first chunk) + one follow-up chunk (100 chars max)
    expect(out.fellBack).toBe(false);
    expect([...p.msgs.values()].join(" ")).toBe(Array.from({ length: 30 }, (_, i) => `w${i}`).join(" "));
    expect(p.log.some((l) => l.op === "typing")).toBe(true);
  });

  it("sends the final text anew and deletes the preview when the final edit fails", async () => {
    const { clock, p, relay } = setup();
    const s = relay.stream("c1");
    s.onEvent({ type: "text_delta", runId: "r", delta: "partial" });
    await clock.advance(10);
    p.failEdits = true;
    s.onEvent(end("the complete answer"));
    await clock.advance(2000);
    const out = await s.done;
    expect(out.fellBack).toBe(true);
    expect([...p.msgs.values()]).toEqual(["the complete answer"]);
  });

  it("mode off sends once at the end", async () => {
    const { clock, p, relay } = setup("off");
    const s = relay.stream("c1");
    s.onEvent({ type: "text_delta", runId: "r", delta: "abc" });
    await clock.advance(5000);
    expect(p.log.filter((l) => l.op === "send")).toHaveLength(0);
    s.onEvent(end("abc"));
    await s.done;
    expect(p.log.filter((l) => l.op !== "typing").map((l) => l.op)).toEqual(["send"]);
  });

  it("shows tool progress in the preview but not in the final text", async () => {
    const { clock, p, relay } = setup();
    const s = relay.stream("c1");
    s.onEvent({ type: "tool_start", runId: "r", callId: "1", name: "web_fetch", args: {} });
    await clock.advance(10);
    expect([...p.msgs.values()][0]).toContain("web_fetch");
    s.onEvent(end("done"));
    await clock.advance(2000);
    await s.done;
    expect([...p.msgs.values()]).toEqual(["done"]);
  });

  it("says the error of a turn that failed before answering once, not as text and again as error", async () => {
    const { p, relay } = setup("off");
    const s = relay.stream("c1");
    const message = "I could not save this conversation because the disk holding my database is full.";
    s.onEvent({ type: "error", runId: "r", code: "STORE_FULL", message });
    s.onEvent(end(message, "error"));
    await s.done;
    expect(p.log.filter((l) => l.op === "send").map((l) => l.text)).toEqual([message]);
  });

  it("renews the typing indicator every 4 s while the turn runs, and stops at the end", async () => {
    const { clock, p, relay } = setup("off");
    const s = relay.stream("c1");
    s.startTyping();
    s.onEvent({
      type: "turn_start",
      runId: "r",
      sessionKey: "k",
      sessionId: "s",
      agentId: "main",
      requestId: "q",
    });
    await clock.advance(10_000);
    const typing = (): number[] => p.log.filter((l) => l.op === "typing").map((l) => l.at - p.log[0]!.at);
    expect(typing()).toEqual([0, 4000, 8000]);
    s.onEvent(end("done"));
    await s.done;
    await clock.advance(20_000);
    expect(typing()).toHaveLength(3);
  });

  it("stops typing while the turn waits for the owner's answer and resumes once every question settled", async () => {
    const { clock, p, relay } = setup("off");
    const s = relay.stream("c1");
    s.onEvent({
      type: "turn_start",
      runId: "r",
      sessionKey: "k",
      sessionId: "s",
      agentId: "main",
      requestId: "q",
    });
    const start = clock.now();
    const typing = (): number[] => p.log.filter((l) => l.op === "typing").map((l) => l.at - start);
    await clock.advance(5000);
    expect(typing()).toEqual([0, 4000]);
    // Two questions at once (parallel tool calls): typing comes back only after both are settled.
    const notice = (kind: string): AgentEvent => ({ type: "notice", runId: "r", kind, text: "" });
    s.onEvent(notice(APPROVAL_WAIT_NOTICE));
    s.onEvent(notice(APPROVAL_WAIT_NOTICE));
    await clock.advance(20_000);
    s.onEvent(notice(APPROVAL_ANSWERED_NOTICE));
    await clock.advance(20_000);
    expect(typing()).toEqual([0, 4000]);
    s.onEvent(notice(APPROVAL_ANSWERED_NOTICE));
    await clock.advance(5000);
    expect(typing()).toEqual([0, 4000, 45_000, 49_000]);
    s.onEvent(end("done"));
    await s.done;
  });

  it("rate-limits error replies per chat and code", async () => {
    const { clock, p, relay } = setup();
    const fail = async (s: ReturnType<typeof relay.stream>): Promise<void> => {
      s.onEvent({ type: "error", runId: "r", code: "MODEL_UNAVAILABLE", message: "The model is down." });
      s.onEvent(end("", "error"));
      await s.done;
    };
    const downs = (): number => p.log.filter((l) => l.text === "The model is down.").length;
    // A burst: three messages arrive, then their turns fail one after the other.
    const burst = [relay.stream("c1"), relay.stream("c1"), relay.stream("c1")];
    await clock.advance(1000);
    for (const s of burst) await fail(s);
    expect(downs()).toBe(1);
    // Another chat and another code are not limited by it.
    await fail(relay.stream("c2"));
    expect(downs()).toBe(2);
    // A message written after the user saw the error is answered too, within the interval.
    await clock.advance(5000);
    await fail(relay.stream("c1"));
    expect(downs()).toBe(3);
    // Without an arrival time (pairing, unsolicited notices) the interval alone counts.
    expect(await relay.errorReply("c3", "pairing", "code")).toBe(true);
    await clock.advance(30_000);
    expect(await relay.errorReply("c3", "pairing", "code")).toBe(false);
    await clock.advance(31_000);
    expect(await relay.errorReply("c3", "pairing", "code")).toBe(true);
  });
});
