/**
 * What the log says about a turn, from the real daemon (child process) and the fake OpenAI server:
 * one info line per turn (channel, session, agent, model, tokens, cost, duration, outcome), debug
 * lines per stage, the echo warning once, no "started" line for a channel that is off.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { cleanupDaemons, startDaemonProcess, type DaemonProcess } from "./helpers/daemon.js";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  await cleanupDaemons();
});

interface LogLine {
  level: string;
  msg: string;
  [k: string]: unknown;
}

const logs = (d: DaemonProcess): LogLine[] =>
  d
    .stdoutLines()
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);

async function ask(d: DaemonProcess, text: string): Promise<string> {
  const res = await fetch(`${d.url}/v1/chat/completions`, {
    method: "POST",
    headers: d.headers({ "x-familiar-session": "u1" }),
    body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: text }] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
}

/** The log lines arrive after the HTTP answer; wait for the one we need. */
async function waitLog(d: DaemonProcess, pred: (l: LogLine) => boolean): Promise<LogLine> {
  for (let i = 0; i < 400; i++) {
    const hit = logs(d).find(pred);
    if (hit) return hit;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`log line not found in:\n${d.stdoutLines().slice(-15).join("\n")}`);
}

describe("turn log", () => {
  it("one info line per turn with what a reader asks for, and debug lines per stage", async () => {
    const d = await startDaemonProcess({
      config: {
        log: { level: "debug", pretty: false },
        models: {
          providers: { fake: { base_url: fake.baseUrl, api_key: "sk-test" } },
          primary: "fake/gpt-test",
          max_retries: 0,
          pricing: { "fake/gpt-test": { input: 1, output: 2 } },
        },
      },
    });
    fake.enqueue({
      text: "hello there",
      usage: { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050 },
    });
    expect(await ask(d, "hi")).toBe("hello there");
    const line = await waitLog(d, (l) => l.msg.startsWith("turn ") && l.level === "info");
    expect(line).toMatchObject({
      agent: "main",
      model: "fake/gpt-test",
      input: 1000,
      output: 50,
      cost: 0.0011,
      outcome: "stop",
      modelCalls: 1,
      toolCalls: 0,
    });
    expect(typeof line.channel).toBe("string");
    expect(line.session).toMatch(/^agent:main:/);
    expect(typeof line.ms).toBe("number");
    expect(line.msg).toMatch(
      new RegExp(
        `^turn ${String(line.channel)} ${String(line.session)} agent main model fake/gpt-test: ` +
          "1000 in \\+ 50 out tokens, \\$0\\.0011, \\d+\\.\\d\\d s, stop$",
      ),
    );
    expect(logs(d).filter((l) => l.msg.startsWith("turn ") && l.level === "info")).toHaveLength(1);
    // Debug: the turn's start and its model call.
    expect(logs(d).find((l) => l.level === "debug" && l.msg.startsWith("turn start:"))).toMatchObject({
      agent: "main",
      model: "(default)",
    });
    expect(
      logs(d).find((l) => l.level === "debug" && l.msg.startsWith("model call fake/gpt-test")),
    ).toMatchObject({
      input: 1000,
      output: 50,
    });
    // Channels that are off are not "started"; at debug they say they are disabled.
    expect(logs(d).some((l) => /^(telegram|discord) started$/.test(l.msg))).toBe(false);
    expect(logs(d).some((l) => l.msg === "telegram is disabled (not started)")).toBe(true);
  });

  it("a failing provider logs the turn as a warning naming the error; the echo warning comes once", async () => {
    const echo = await startDaemonProcess();
    expect(await ask(echo, "one")).toBe("echo: one");
    expect(await ask(echo, "two")).toBe("echo: two");
    await waitLog(
      echo,
      (l) => l.msg.startsWith("turn ") && l.msg.endsWith("stop") && /echo\/echo/.test(l.msg),
    );
    expect(logs(echo).filter((l) => /NO MODEL PROVIDER CONFIGURED/.test(l.msg))).toHaveLength(1);
    expect(logs(echo).some((l) => /^(telegram|discord) started$/.test(l.msg))).toBe(false);

    const d = await startDaemonProcess({
      config: {
        models: {
          providers: { fake: { base_url: fake.baseUrl, api_key: "sk-test" } },
          primary: "fake/gpt-test",
          max_retries: 0,
        },
      },
    });
    fake.enqueue({ error: { status: 401 } });
    await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      headers: d.headers(),
      body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "hi" }] }),
    });
    const warn = await waitLog(d, (l) => l.msg.startsWith("turn ") && l.level === "warn");
    expect(warn.outcome).toBe("error MODEL_AUTH");
    expect(String(warn.error)).toContain(`fake/gpt-test at ${fake.baseUrl}`);
  });
});
