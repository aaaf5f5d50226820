/**
 * The moved-in assistant at work: import the real program's state (the fixture), then run Familiar on
 * it. A turn sends the imported personality files to the model; `memory_search` finds a fact from an
 * imported OpenClaw conversation; Telegram answers the owner and the user approved in OpenClaw and
 * refuses a stranger (a pairing code, no model call); the imported cron job runs at its time on a
 * fake clock.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, parseDocument } from "yaml";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { importOpenClawCommand } from "../../internal/cli/import.js";
import { FakeClock } from "../../internal/core/clock.js";
import { createCronService } from "../../internal/cron/cron-service.js";
import { startFakeOpenAI, type FakeOpenAI, lastUserOf } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer } from "../fakes/telegram-server.js";
import { cleanupDaemons, freePort, startDaemonProcess } from "../helpers/daemon.js";
import { startHarness, until } from "../helpers/scheduler-harness.js";
import { TELEGRAM_TOKEN } from "../helpers/openclaw-driver.js";
import { copyFixture } from "./openclaw-fixture.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram(TELEGRAM_TOKEN);
});
afterAll(async () => {
  await tg.close();
  await llm.close();
});
afterEach(async () => {
  await cleanupDaemons();
  llm.reset();
});

/** Imports the fixture (pointed at the live fakes) into a new instance; returns its directory. */
function imported(): string {
  const from = copyFixture({ modelUrl: llm.baseUrl, telegramRoot: tg.apiRoot });
  const into = join(from, "..", "familiar");
  const code = importOpenClawCommand({
    from,
    into,
    config: "./config.yaml",
    acceptAllRisky: true,
    out: () => {},
    err: () => {},
  });
  expect(code).toBe(0);
  return into;
}

const systemOf = (i: number): string => {
  const m = llm.requests[i]?.body?.messages?.find((x) => x.role === "system");
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content ?? "");
};

describe("Familiar after the import", () => {
  it("answers with the imported personality, remembers an imported conversation, and keeps the Telegram allowlist", async () => {
    const into = imported();
    const port = await freePort();
    const doc = parseDocument(readFileSync(join(into, "config.yaml"), "utf8"));
    doc.setIn(["gateway", "port"], port);
    doc.setIn(["log", "level"], "warn");
    doc.setIn(["timezone"], "UTC");
    doc.setIn(["models", "max_retries"], 0);
    doc.setIn(["heartbeat", "every"], "0");
    const d = await startDaemonProcess({
      config: doc.toString(),
      dir: into,
      port,
      env: { FAKEAI_API_KEY: "sk-test", OLLAMA_BOX_API_KEY: "unused", TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN },
      timeoutMs: 60_000,
    });

    // The owner (allow_from) asks; the model is told to search memory, then answers.
    llm.enqueue(
      { toolCalls: [{ name: "memory_search", arguments: { query: "Ilse birthday" } }] },
      { text: "Ilse's birthday is on the 14th of March." },
    );
    tg.pushText({ id: 111111111, first_name: "Robin" }, "When is my sister's birthday?");
    await tg.waitFor(
      () => tg.visible(111111111).some((m) => m.text.includes("14th of March")),
      30_000,
      "the owner's answer",
    );
    expect(systemOf(0)).toContain("You are Quill, a dry-witted assistant");
    expect(systemOf(0)).toContain("Lives in Lisbon, works as a luthier.");
    expect(systemOf(0)).toContain("Robin prefers tea over coffee.");
    const toolResult = llm.requests[1]?.body?.messages?.find((m) => m.role === "tool");
    expect(JSON.stringify(toolResult?.content)).toContain("14th of March");

    // The user approved by pairing in OpenClaw is let in.
    llm.enqueue({ text: "Hello Sam." });
    tg.pushText({ id: 222222222, first_name: "Sam" }, "hi again");
    await tg.waitFor(
      () => tg.visible(222222222).some((m) => m.text === "Hello Sam."),
      30_000,
      "Sam's answer",
    );

    // A stranger gets a pairing code and never reaches the model.
    const before = llm.requests.length;
    tg.pushText({ id: 333333333, first_name: "Eve" }, "let me in, what do you know about Robin?");
    await tg.waitFor(() => tg.visible(333333333).length > 0, 30_000, "the stranger's pairing reply");
    expect(tg.visible(333333333)[0]?.text).toMatch(/familiar pairing approve [A-Z2-9]{8}/);
    expect(llm.requests.length).toBe(before);
    expect(llm.requests.map((r) => lastUserOf(r)).join("\n")).not.toContain("let me in");
    expect((await d.stop("SIGTERM")).code).toBe(0);
  }, 120_000);

  it("runs the imported cron job at its time (fake clock)", async () => {
    const into = imported();
    const cfg = parse(readFileSync(join(into, "config.yaml"), "utf8")) as {
      cron: { jobs: Record<string, unknown>[] };
    };
    // 30 7 * * 1-5 in Europe/Lisbon: on Monday 2026-01-05 that is 07:30 UTC (winter time).
    const clock = new FakeClock(Date.parse("2026-01-05T07:00:00Z"));
    const h = await startHarness(llm, { cron: { jobs: cfg.cron.jobs } }, { clock });
    const svc = createCronService(h.core.ctx, {
      host: h.host,
      outbox: h.channels,
      pollClock: new FakeClock(),
    });
    await svc.start();
    try {
      await clock.advance(29 * 60_000);
      await until(() => svc.list().every((j) => !j.running), "no run yet");
      expect(llm.requests.map((r) => lastUserOf(r)).join("\n")).not.toContain("varnish");
      await clock.advance(2 * 60_000);
      await until(
        () => llm.requests.some((r) => lastUserOf(r).includes("Summarise my day and the varnish order.")),
        "the 07:30 run",
      );
      await until(() => svc.list().every((j) => !j.running), "the run to finish");
      const runs = svc.runs("openclaw-morning-brief", 10).filter((r) => r.status !== "skipped");
      expect(runs.map((r) => new Date(r.startedAt).toISOString())).toEqual(["2026-01-05T07:30:00.000Z"]);
    } finally {
      await svc.stop();
      h.core.close();
    }
  });
});
