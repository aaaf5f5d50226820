/**
 * Issue 3, usage: a turn through the real daemon (child process, fake model with known usage) is
 * recorded per model call, and `familiar usage --json` shows its tokens after the daemon restarted.
 */
import { spawn } from "node:child_process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { childEnv, cleanupDaemons, cliCommand, startDaemonProcess } from "./helpers/daemon.js";

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

function usageJson(configPath: string, cwd: string): Promise<{ code: number | null; out: string }> {
  const [cmd, ...pre] = cliCommand();
  const child = spawn(cmd!, [...pre, "usage", "--json", "--config", configPath], { cwd, env: childEnv() });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  return new Promise((res) => child.on("close", (code) => res({ code, out })));
}

describe("usage survives a restart", () => {
  it("shows the tokens of a finished turn after the daemon restarted", async () => {
    const config = {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-test" } },
        primary: "fake/gpt-test",
        max_retries: 0,
        pricing: { "fake/gpt-test": { input: 1, output: 2 } },
      },
    };
    const d = await startDaemonProcess({ config });
    fake.enqueue({
      text: "hello there",
      usage: {
        prompt_tokens: 1234,
        completion_tokens: 56,
        total_tokens: 1290,
        prompt_tokens_details: { cached_tokens: 200 },
      },
    });
    const res = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      headers: d.headers({ "x-familiar-session": "u1" }),
      body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content,
    ).toBe("hello there");
    expect((await d.stop("SIGTERM")).code).toBe(0);

    const d2 = await startDaemonProcess({ config, dir: d.dir, port: d.port });
    const r = await usageJson(d2.configPath, d2.dir);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as {
      total: { calls: number; input: number; output: number; cacheRead: number; total: number; cost: number };
      byModel: { provider: string; model: string; calls: number }[];
    };
    expect(report.total).toMatchObject({ calls: 1, input: 1234, output: 56, cacheRead: 200, total: 1290 });
    expect(report.total.cost).toBeGreaterThan(0);
    expect(report.byModel[0]).toMatchObject({ provider: "fake", model: "gpt-test", calls: 1 });
  });
});
