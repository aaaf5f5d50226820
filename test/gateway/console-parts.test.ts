/**
 * The console's pure parts: what the overview says needs the owner (and in what order, linked to
 * where), how an approval is headed, and which days the usage chart shows. The browser test
 * (console.browser.test.ts) shows them against a running daemon; this covers the cases it cannot
 * stage (a failing cron job, a budget past its line, a degraded channel, a failed backup).
 */
import { describe, expect, it } from "vitest";
import { attention, type AttentionInput } from "../../console/src/views/attention.js";
import { approvalAsk } from "../../console/src/views/approval-ask.js";
import { firstShownDay } from "../../console/src/views/usage-range.js";

const calm: AttentionInput = {
  approvals: [],
  pairing: [],
  cronJobs: [{ id: "morning", lastStatus: "ok", enabled: true }],
  failedTurns: [],
  budgets: [{ id: "overall:daily_usd", label: "overall", period: "daily", fraction: 0.1 }],
  warnAt: 0.8,
  channels: { telegram: { state: "connected" } },
  disk: { state: "ok" },
  backup: { last: { ok: true, error: null } },
};

describe("what needs the owner", () => {
  it("is nothing on a calm day", () => {
    expect(attention(calm)).toEqual([]);
  });

  it("lists each thing in words, linked to where it is settled, failures before waits", () => {
    const items = attention({
      ...calm,
      approvals: [{ kind: "exec", summary: "$ rm -rf build\n(more)" }],
      pairing: [{ channel: "telegram", userId: "77", userName: "Ann" }],
      cronJobs: [
        { id: "morning", lastStatus: "error", enabled: true },
        // A paused job's old failure is not the owner's business now.
        { id: "paused", lastStatus: "error", enabled: false },
      ],
      failedTurns: [{ request_id: "r 1", question: "What now?", error: "MODEL_BAD_REQUEST: no\nmore" }],
      budgets: [
        { id: "overall:daily_usd", label: "overall", period: "daily", fraction: 0.82 },
        { id: "main:monthly_usd", label: "main", period: "monthly", fraction: 0.5 },
      ],
      channels: { telegram: { state: "degraded", detail: "409 conflict" }, discord: { state: "connected" } },
      disk: { state: "degraded", detail: "120 MB free" },
      backup: { last: { ok: false, error: "EACCES" } },
    });
    expect(items.map((i) => [i.id, i.tone, i.href])).toEqual([
      ["cron", "bad", "#/cron"],
      ["failed-turns", "bad", "#/traces/r%201"],
      ["disk", "bad", "#/logs"],
      ["backup", "bad", "#/logs"],
      ["approvals", "warn", "#/approvals"],
      ["pairing", "warn", "#/approvals"],
      ["channel:telegram", "warn", "#/logs"],
      ["budget:overall:daily_usd", "warn", "#/usage"],
    ]);
    const by = (id: string) => items.find((i) => i.id === id)!;
    expect(by("approvals")).toMatchObject({
      text: "1 approval waits for your answer",
      detail: "$ rm -rf build",
    });
    expect(by("pairing").detail).toBe("Ann on telegram");
    expect(by("cron")).toMatchObject({ text: "1 cron job failed on the last run", detail: "morning" });
    expect(by("failed-turns")).toMatchObject({
      text: "1 turn failed today",
      detail: "“What now?”: MODEL_BAD_REQUEST: no",
      action: "Open the trace",
    });
    expect(by("budget:overall:daily_usd").text).toBe("overall budget (daily) at 82%");
    expect(by("channel:telegram")).toMatchObject({ text: "telegram is degraded", detail: "409 conflict" });
  });

  it("names a reminder whose reply reached nobody and where it is kept", () => {
    const items = attention({
      ...calm,
      cronJobs: [
        { id: "tea", lastStatus: "ok", enabled: false, undeliveredRun: 7 },
        { id: "stretch", lastStatus: "ok", enabled: true, undeliveredRun: null },
      ],
    });
    expect(items).toEqual([
      {
        id: "cron:undelivered",
        tone: "warn",
        text: "1 reminder reached nobody: no chat took the reply",
        detail: "kept in familiar cron runs tea; set owner.preferred_channel to receive them",
        href: "#/cron",
        action: "Read it",
      },
    ]);
  });

  it("sends several failed turns to the list, and a spent budget is red", () => {
    const items = attention({
      ...calm,
      failedTurns: [
        { request_id: "a", question: null, error: "x" },
        { request_id: "b", question: null, error: "y" },
      ],
      budgets: [{ id: "overall:daily_usd", label: "overall", period: "daily", fraction: 1.2 }],
    });
    expect(items.find((i) => i.id === "failed-turns")).toMatchObject({
      text: "2 turns failed today",
      href: "#/traces",
    });
    expect(items.find((i) => i.id.startsWith("budget:"))?.tone).toBe("bad");
  });
});

describe("an approval's heading", () => {
  it("says what it asks, not its kind", () => {
    expect(approvalAsk("exec", "$ touch x")).toBe("Run this command?");
    expect(approvalAsk("file", "write notes/plan.md\n(outside the allowed paths)\n---\nhi")).toBe(
      "Write notes/plan.md?",
    );
    expect(approvalAsk("planted", "the command created 2 files: hooks. They are in quarantine now")).toBe(
      "Keep the files a command created?",
    );
    expect(approvalAsk("browse", "open https://example.org?\nbecause")).toBe("open https://example.org?");
  });
});

describe("the usage chart's days", () => {
  it("starts at the first day with usage, a week at least", () => {
    const none = Array<number>(30).fill(0);
    expect(firstShownDay(none)).toBe(0);
    expect(firstShownDay([...none.slice(1), 3])).toBe(23);
    expect(firstShownDay([...none.slice(10), ...Array<number>(10).fill(1)])).toBe(20);
    expect(firstShownDay([0, 0, 1])).toBe(0);
  });
});
