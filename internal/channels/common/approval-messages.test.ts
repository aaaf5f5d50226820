/**
 * A question settled while the platform is still taking it (a slow sendMessage under load) is
 * closed as soon as its send finishes: no question is left with live buttons.
 */
import { describe, expect, it } from "vitest";
import { ApprovalMessages } from "./approval-messages.js";

/** A platform whose sendMessage answers only when `release` is called; records every edit. */
function slowPlatform() {
  let release: (() => void) | undefined;
  const edits: { addr: string; id: string; text: string }[] = [];
  const relay = {
    sendText: (_addr: string, _text: string) =>
      new Promise<string[]>((res) => {
        release = () => res(["m1"]);
      }),
  };
  const adapter = {
    limits: { maxLength: 4096 },
    edit: async (addr: string, id: string, text: string) => {
      edits.push({ addr, id, text });
    },
  };
  return { relay, adapter, edits, release: () => release?.() };
}

describe("approval questions", () => {
  it("a close that arrives before the send finished edits the question once it is sent", async () => {
    const p = slowPlatform();
    const m = new ApprovalMessages(p.relay, p.adapter);
    const sent = m.send("42", "Approval needed (exec):\n$ ls", { markdown: false, approvalId: "a1" });
    expect(await m.close("a1", "expired: no answer in time, not done")).toBe(true);
    expect(p.edits).toEqual([]);
    p.release();
    await sent;
    expect(p.edits).toHaveLength(1);
    expect(p.edits[0]).toMatchObject({ addr: "42", id: "m1" });
    expect(p.edits[0]!.text).toContain("[expired: no answer in time, not done]");
    // Closed once: a second close finds nothing.
    expect(await m.close("a1", "again")).toBe(false);
  });

  it("a question never sent by this channel is not closed here", async () => {
    const p = slowPlatform();
    const m = new ApprovalMessages(p.relay, p.adapter);
    expect(await m.close("nope", "expired")).toBe(false);
    expect(p.edits).toEqual([]);
  });
});
