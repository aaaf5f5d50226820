/**
 * `familiar chat` and `familiar status` as real child processes against a real daemon, with piped stdin.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TOKEN = "cli-chat-token-0987";
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon({ gateway: { token: TOKEN } });
});
afterAll(async () => {
  await h?.close();
});

function runCli(
  args: string[],
  stdin: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", join(ROOT, "cmd", "familiar.ts"), ...args], {
      cwd: ROOT,
      env: { ...process.env, FAMILIAR_GATEWAY_URL: "", FAMILIAR_GATEWAY_TOKEN: "" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(stdin);
  });
}

describe("familiar chat with piped stdin", () => {
  it("sends one message per line, prints each streamed reply in order and exits at EOF", async () => {
    h.fake.enqueue({ text: "first reply", chunkSize: 3 }, { text: "second reply", chunkSize: 3 });
    const r = await runCli(
      ["chat", "--url", h.wsUrl, "--token", TOKEN, "--session", "piped"],
      "hello\n\nagain\n",
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("first reply\nsecond reply\n");
    const rows = h.daemon.db
      .prepare(
        "SELECT m.role, m.content FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? ORDER BY m.id",
      )
      .all("agent:main:gateway:piped");
    expect(rows).toEqual([
      { role: "user", content: "hello" },
      { role: "assistant", content: "first reply" },
      { role: "user", content: "again" },
      { role: "assistant", content: "second reply" },
    ]);
  }, 60_000);

  it("reads the gateway address and token from the config file; a bad token fails clearly", async () => {
    h.fake.enqueue({ text: "via config" });
    const ok = await runCli(["chat", "--config", h.configPath], "ping\n");
    expect(ok.stdout).toBe("via config\n");
    const bad = await runCli(["chat", "--config", h.configPath, "--token", "wrong"], "ping\n");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid gateway token/);
  }, 60_000);

  it("familiar status prints uptime, queue depth and today's tokens", async () => {
    const r = await runCli(["status", "--config", h.configPath], "");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^uptime\s+/m);
    expect(r.stdout).toMatch(/^queue\s+0$/m);
    expect(r.stdout).toMatch(/^tokens today \d+/m);
  }, 60_000);
});
