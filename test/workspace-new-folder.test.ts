/**
 * Issue 46 item 1: a `workspace:` folder that does not exist yet. The daemon creates it (0700) at
 * start, so an unsandboxed `exec` and a `claude-cli` agent (the fake CLI, test/fakes/fake-claude.mjs)
 * work on a new install; where it cannot be created (a file in the way), `familiar run` refuses to
 * start in one line naming the folder and why.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { startGatewayDaemon, type GatewayHarness } from "./gateway/harness.js";
import { cleanupDaemons, startDaemonProcess } from "./helpers/daemon.js";

const FAKE_CLAUDE = resolve("test/fakes/fake-claude.mjs");

let fake: FakeOpenAI;
let gw: GatewayHarness | undefined;
const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "familiar-new-ws-"));
  dirs.push(d);
  return d;
};
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
  fake.reset();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  await cleanupDaemons();
  await fake.close();
});

async function ask(model = "familiar"): Promise<{ status: number; text: string }> {
  const res = await fetch(`${gw!.base}/v1/chat/completions`, {
    method: "POST",
    headers: gw!.headers(),
    body: JSON.stringify({ model, messages: [{ role: "user", content: "where are you?" }] }),
  });
  const body = (await res.json()) as { choices?: { message: { content: string } }[] };
  return { status: res.status, text: body.choices?.[0]?.message.content ?? JSON.stringify(body) };
}

describe("a workspace folder that does not exist yet", () => {
  it("is created 0700 at start, and an unsandboxed exec runs in it", async () => {
    const workspace = join(tmp(), "not", "yet", "workspace");
    fake.enqueue(
      { toolCalls: [{ id: "call_pwd", name: "exec", arguments: { command: "pwd" } }] },
      { text: "I am in the workspace." },
    );
    gw = await startGatewayDaemon({
      fake,
      config: { workspace, tools: { exec: { sandbox: { enabled: false } } } },
    });
    expect(statSync(workspace).isDirectory()).toBe(true);
    expect(statSync(workspace).mode & 0o777).toBe(0o700);
    const r = await ask();
    expect(r).toEqual({ status: 200, text: "I am in the workspace." });
    const toolMsg = (fake.requests[1]?.body?.messages ?? []).find(
      (m) => (m as { role: string }).role === "tool",
    ) as { content: string } | undefined;
    expect(toolMsg?.content).toContain(workspace);
    expect(toolMsg?.content).not.toMatch(/ENOENT|could not start/);
  });

  it("is created at start, and a claude-cli agent answers", async () => {
    const state = tmp();
    process.env.FAKE_CLAUDE_STATE = state;
    const workspace = join(tmp(), "fresh-workspace");
    try {
      gw = await startGatewayDaemon({
        fake,
        config: {
          workspace,
          agents: {
            main: {
              engine: "claude-cli",
              command: FAKE_CLAUDE,
              sandbox: false,
              pass_env: ["FAKE_CLAUDE_STATE"],
            },
          },
        },
      });
      const r = await ask();
      expect(r.status).toBe(200);
      expect(r.text).toMatch(/^turn 1 in \S+: where are you\?$/);
    } finally {
      delete process.env.FAKE_CLAUDE_STATE;
    }
  });

  it("`familiar run` refuses to start, naming the folder and why, when a file is in the way", async () => {
    const dir = tmp();
    writeFileSync(join(dir, "blocker"), "a file, not a folder");
    const workspace = join(dir, "blocker", "workspace");
    const d = await startDaemonProcess({ config: { workspace }, noWait: true });
    const exit = await d.waitExit();
    expect(exit.code).not.toBe(0);
    const said = d.stderrLines().join("\n");
    expect(said).toContain(`workspace: ${workspace} cannot be used`);
    expect(said).toContain(`${join(dir, "blocker")} is a file, not a folder`);
    expect(said).toMatch(/set workspace: in config\.yaml/);
    await d.cleanup();
  });

  it("`familiar run` refuses to start when the workspace path is a file", async () => {
    const dir = tmp();
    const workspace = join(dir, "ws");
    writeFileSync(workspace, "not a folder");
    const d = await startDaemonProcess({ config: { workspace }, noWait: true });
    expect((await d.waitExit()).code).not.toBe(0);
    expect(d.stderrLines().join("\n")).toContain(
      `workspace: ${workspace} cannot be used: something that is not a folder is in the way`,
    );
    await d.cleanup();
  });
});
