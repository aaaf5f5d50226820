/**
 * Reminders come back to the chat they were asked in (issue 47): a real daemon on 127.0.0.1 with the
 * fake model and a FakeClock. "Remind me in 2 minutes" asked over the websocket (as the web chat does)
 * through the agent's cron tool arrives in that session, pushed live and kept in the transcript; a
 * connection showing another session does not get it; with no chat and no preferred channel the
 * owner is warned once, and `status` says where the reply is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { FakeClock } from "../../internal/core/clock.js";
import { GatewayClient } from "../../internal/gateway/client.js";
import { addJob } from "../../internal/cli/cron.js";
import { formatStatus } from "../../internal/cli/status.js";
import { runDoctor } from "../../internal/cli/doctor.js";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const T0 = Date.UTC(2026, 5, 1, 12, 0);
const clock = new FakeClock(T0);
let h: GatewayHarness;
let web: GatewayClient;
let other: GatewayClient;
const events: { conn: string; event: string; payload: Record<string, unknown> }[] = [];

interface HistoryMsg {
  role: string;
  content: string;
}

beforeAll(async () => {
  h = await startGatewayDaemon({ clock, config: { heartbeat: { every: 0 } } });
  web = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "web-chat" });
  other = await GatewayClient.connect({ url: h.wsUrl, token: h.token, clientName: "web-chat-2" });
  for (const [name, c] of [
    ["web", web],
    ["other", other],
  ] as const)
    c.on("reminder", (p) =>
      events.push({ conn: name, event: "reminder", payload: p as Record<string, unknown> }),
    );
});
afterAll(async () => {
  await web?.close();
  await other?.close();
  await h?.close();
});

const warnings = (needle: string): string[] =>
  h.logs().filter((l) => l.includes(needle) && JSON.parse(l).level === "warn");

describe("a reminder asked in a web chat session", () => {
  it("is stored with where it was asked, then arrives in that session live and in its transcript", async () => {
    // The other connection shows another session: the reminder is not its business.
    await other.request("chat.history", { sessionKey: "elsewhere" });
    h.fake.enqueue(
      {
        toolCalls: [
          {
            name: "cron",
            arguments: { action: "add", id: "stretch", message: "Tell me to stretch.", at: "in 2 minutes" },
          },
        ],
      },
      { text: "I will remind you in 2 minutes." },
    );
    const sent = await web.request<{ sessionKey: string; result: { text: string } }>("chat.send", {
      sessionKey: "web-1",
      message: "remind me in 2 minutes to stretch",
      wait: true,
    });
    expect(sent.result.text).toBe("I will remind you in 2 minutes.");
    const origin = h.daemon.db
      .prepare("SELECT kind, session_key, reply_target FROM cron_origins WHERE job_id = 'stretch'")
      .get();
    expect(origin).toEqual({ kind: "chat", session_key: "agent:main:gateway:web-1", reply_target: null });
    const job = h.daemon.parts.cron.get("stretch");
    expect(job).toMatchObject({ deliver: "origin", nextRunAt: T0 + 120_000 });

    h.fake.enqueue({ text: "Time to stretch!" });
    await clock.advance(120_000);
    const got = await waitFor(() => events.find((e) => e.payload.jobId === "stretch"));
    expect(got.conn).toBe("web");
    expect(got.payload).toMatchObject({
      sessionKey: "agent:main:gateway:web-1",
      jobId: "stretch",
      text: "Time to stretch!",
    });
    expect(events.filter((e) => e.conn === "other")).toEqual([]);

    // A reload shows it: the transcript holds it after the turn that asked for it.
    const hist = await web.request<{ messages: HistoryMsg[] }>("chat.history", { sessionKey: "web-1" });
    const texts = hist.messages.filter((m) => m.role !== "tool").map((m) => [m.role, m.content]);
    expect(texts.slice(-2)).toEqual([
      ["assistant", "I will remind you in 2 minutes."],
      ["assistant", "Time to stretch!"],
    ]);
    const runs = h.daemon.parts.cron.runs("stretch");
    expect(runs[0]).toMatchObject({ status: "ok", delivered: true, outputPreview: "Time to stretch!" });
    expect(warnings("stretch")).toEqual([]);
  });

  it("with nobody in the session and no preferred channel, it stays in the transcript and the owner is warned", async () => {
    await web.request("chat.history", { sessionKey: "web-2" });
    h.fake.enqueue(
      {
        toolCalls: [
          { name: "cron", arguments: { action: "add", id: "water", message: "Water.", at: "+2m" } },
        ],
      },
      { text: "Done." },
    );
    await web.request("chat.send", {
      sessionKey: "web-2",
      message: "remind me to water the plants",
      wait: true,
    });
    // The page moves to another session: nobody shows web-2 now.
    await web.request("chat.history", { sessionKey: "web-3" });
    h.fake.enqueue({ text: "Water the plants." });
    await clock.advance(120_000);
    await waitFor(() => h.daemon.parts.cron.runs("water")[0]?.status === "ok");
    expect(events.filter((e) => e.payload.jobId === "water")).toEqual([]);
    const hist = await web.request<{ messages: HistoryMsg[] }>("chat.history", { sessionKey: "web-2" });
    expect(hist.messages.at(-1)).toMatchObject({ role: "assistant", content: "Water the plants." });
    const warned = await waitFor(() => warnings("cron job water").length > 0 && warnings("cron job water"));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain("familiar cron runs water");
    expect(warned[0]).toContain("owner.preferred_channel is not set");
  });
});

describe("a reminder whose job a tainted session wrote", () => {
  it("taints the clean session its reply lands in; a clean reminder leaves its session clean", async () => {
    const c = h.daemon.parts.tools.containment;
    const headOf = (name: string): string =>
      (
        h.daemon.db
          .prepare("SELECT session_id FROM session_heads WHERE key = ?")
          .get(`agent:main:gateway:${name}`) as { session_id: string }
      ).session_id;
    await web.request("chat.history", { sessionKey: "web-4" });
    h.fake.enqueue(
      { toolCalls: [{ name: "cron", arguments: { action: "add", id: "news", message: "News.", at: "2m" } }] },
      { text: "Ok." },
    );
    await web.request("chat.send", { sessionKey: "web-4", message: "remind me of the news", wait: true });
    expect(c.sourcesOf(headOf("web-4"))).toEqual([]);
    // As if a tainted session had edited the job since: the label rides on the job's identity.
    c.labels.add("job", "news", "s-evil", [{ kind: "web_fetch", detail: "https://evil.example", at: 1 }]);
    h.fake.enqueue({ text: "Here is the news." });
    await clock.advance(120_000);
    await waitFor(() => events.find((e) => e.payload.jobId === "news"));
    expect(c.sourcesOf(headOf("web-4")).map((x) => x.kind)).toContain("tainted_subagent");
    // The control: web-1 received the clean "stretch" reminder and stays clean.
    expect(c.sourcesOf(headOf("web-1"))).toEqual([]);
  });
});

describe("a reminder asked in `familiar chat`", () => {
  it("is printed by the terminal chat that is in that session", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(ROOT, "cmd", "familiar.ts"),
        "chat",
        "--url",
        h.wsUrl,
        "--token",
        h.token,
        "--session",
        "term",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, FAMILIAR_GATEWAY_URL: "", FAMILIAR_GATEWAY_TOKEN: "" },
        stdio: "pipe",
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const closed = new Promise<number | null>((res) => child.on("close", res));
    try {
      h.fake.enqueue(
        { toolCalls: [{ name: "cron", arguments: { action: "add", id: "tea", message: "Tea.", at: "2m" } }] },
        { text: "Reminder set." },
      );
      child.stdin.write("remind me about the tea in 2 minutes\n");
      await waitFor(() => stdout.includes("Reminder set.\n"), 30_000);
      expect(h.daemon.db.prepare("SELECT session_key FROM cron_origins WHERE job_id = 'tea'").get()).toEqual({
        session_key: "agent:main:gateway:term",
      });
      h.fake.enqueue({ text: "Your tea is ready." });
      await clock.advance(120_000);
      await waitFor(() => stdout.includes("[reminder tea] Your tea is ready.\n"), 30_000);
      expect(h.daemon.parts.cron.runs("tea")[0]).toMatchObject({ status: "ok", delivered: true });
    } finally {
      child.stdin.end();
    }
    expect(await closed).toBe(0);
    expect(stderr).toBe("");
    expect(stdout).toBe("Reminder set.\n\n[reminder tea] Your tea is ready.\n");
  }, 60_000);
});

describe("a job added by `familiar cron add` with no chat and no preferred channel", () => {
  it("is recorded as from the CLI; its undelivered reply is a WARN once, then a status line", async () => {
    await addJob(
      h.configPath,
      { id: "hydrate", message: "Drink water.", every: "1m", deliver: "origin" },
      clock.now(),
    );
    h.daemon.parts.cron.refresh();
    expect(h.daemon.db.prepare("SELECT kind FROM cron_origins WHERE job_id = 'hydrate'").get()).toEqual({
      kind: "cli",
    });
    h.fake.enqueue({ text: "Drink some water." }, { text: "Drink some more water." });
    await clock.advance(60_000);
    await waitFor(() => h.daemon.parts.cron.runs("hydrate")[0]?.status === "ok");
    await clock.advance(60_000);
    await waitFor(() => h.daemon.parts.cron.runs("hydrate").filter((r) => r.status === "ok").length === 2);
    const lines = h.logs().filter((l) => l.includes("cron job hydrate: the reply was not delivered"));
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(["warn", "info"]);
    expect(lines[0]).toContain("added by `familiar cron add`");

    const st = await web.request<{ cron: { id: string; undeliveredRun: number | null }[] }>("status");
    const row = st.cron.find((j) => j.id === "hydrate");
    expect(row?.undeliveredRun).toBe(h.daemon.parts.cron.runs("hydrate")[0]!.id);
    expect(formatStatus(st as unknown as Record<string, unknown>)).toContain(
      "reply not delivered (no chat to take it; set owner.preferred_channel): familiar cron runs hydrate",
    );
    const doctor = await runDoctor(h.configPath, { env: {}, timeoutMs: 2000 });
    const line = doctor.find((c) => c.name === "reminders");
    expect(line?.status).toBe("warn");
    expect(line?.detail).toContain("familiar cron runs hydrate");
    expect(line?.detail).toContain("set owner.preferred_channel");
    h.daemon.parts.cron.remove("hydrate");
  });
});
