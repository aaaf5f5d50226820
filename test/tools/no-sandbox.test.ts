/**
 * A machine without bubblewrap (issue 18): the daemon says at start that commands run without a
 * sandbox, `familiar doctor` says what to install, and every command outside the allow list asks the
 * owner first instead of running. "Without bwrap" is a PATH on which it cannot be found: the real
 * daemon and CLI in child processes, the fake OpenAI server, a gateway client that gets the request.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../internal/gateway/client.js";
import type { ChatEventPayload } from "../../internal/gateway/chat-events.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { childEnv, cleanupDaemons, cliCommand, startDaemonProcess } from "../helpers/daemon.js";

/** A PATH that holds nothing: no bwrap (and no prlimit), as on a machine without bubblewrap. */
const NO_BWRAP = { PATH: "/nonexistent-familiar-bin" };

let fake: FakeOpenAI;
let dir: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  dir = mkdtempSync(join(tmpdir(), "familiar-nobwrap-"));
});
afterAll(async () => {
  await cleanupDaemons();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

const providers = () => ({
  models: {
    providers: { fake: { base_url: fake.baseUrl, api_key: "sk-test" } },
    primary: "fake/gpt-test",
    max_retries: 0,
  },
});

/** Polls `fn` until it returns a value (15 s). */
async function until<T>(fn: () => T | undefined): Promise<T> {
  for (let i = 0; i < 750; i++) {
    const v = fn();
    if (v !== undefined) return v;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error("condition not met in time");
}

describe("without bubblewrap on the machine", () => {
  it("doctor warns with what to install and what happens meanwhile", async () => {
    writeFileSync(join(dir, "config.yaml"), `data_dir: ./data\nworkspace: ./workspace\n`);
    const [cmd, ...pre] = cliCommand();
    const child = spawn(cmd!, [...pre, "doctor"], { cwd: dir, env: childEnv(NO_BWRAP), stdio: "pipe" });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    await new Promise((r) => child.on("close", r));
    const line = out.split("\n").find((l) => l.slice(6).startsWith("sandbox:"));
    expect(line).toMatch(
      /^warn {2}sandbox: not available: bwrap was not found; install bubblewrap \(Debian\/Ubuntu: apt install bubblewrap.*\); every command outside tools\.exec\.allowlist asks the owner first$/,
    );
  });

  it("the daemon says so at start, and a command asks the owner instead of running", async () => {
    const d = await startDaemonProcess({ config: providers(), env: NO_BWRAP });
    // Logged once the probe has answered, which may be just after /healthz is up.
    await until(() => d.stdoutLines().find((l) => l.includes("exec commands run WITHOUT a sandbox")));
    const client = await GatewayClient.connect({
      url: d.url.replace("http", "ws") + "/ws",
      token: d.token(),
      clientName: "no-bwrap",
    });
    try {
      const asked: { id: string; text: string }[] = [];
      const chat: ChatEventPayload[] = [];
      client.on("approval.request", (p) => asked.push(p as { id: string; text: string }));
      client.on("chat", (p) => chat.push(p as ChatEventPayload));
      fake.enqueue(
        { toolCalls: [{ name: "exec", arguments: { command: "echo made > made.txt" } }] },
        { text: "the owner said no" },
      );
      const r = await client.request<{ runId: string }>("chat.send", {
        sessionKey: "nobwrap",
        message: "make a file",
      });
      const req = await until(() => asked[0]);
      expect(req.text).toContain("$ echo made > made.txt");
      // Nothing ran while the owner was being asked.
      expect(existsSync(join(d.workspace, "made.txt"))).toBe(false);
      await client.request("approvals.resolve", { id: req.id, decision: "deny" });
      const fin = await until(() => chat.find((e) => e.runId === r.runId && e.state === "final"));
      expect(fin).toMatchObject({ text: "the owner said no" });
      expect(existsSync(join(d.workspace, "made.txt"))).toBe(false);
    } finally {
      await client.close();
      await d.stop();
    }
  });
});
