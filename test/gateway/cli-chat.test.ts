/**
 * `familiar chat` and `familiar status` as real child processes against a real daemon, with piped stdin.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { startGatewayDaemon, waitFor, type GatewayHarness } from "./harness.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TOKEN = "cli-chat-token-0987";
let h: GatewayHarness;

beforeAll(async () => {
  h = await startGatewayDaemon({
    gateway: { token: TOKEN },
    config: {
      cron: { jobs: [{ id: "morning", cron: "0 9 * * *", message: "plan", deliver: "none" }] },
      agents: { helper: { description: "second agent" } },
    },
  });
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

  it("--agent runs the session with that agent", async () => {
    h.fake.enqueue({ text: "helper here" });
    const r = await runCli(
      ["chat", "--url", h.wsUrl, "--token", TOKEN, "--session", "side", "--agent", "helper"],
      "who are you?\n",
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("helper here\n");
    const head = h.daemon.db
      .prepare(
        "SELECT s.agent_id AS agent FROM session_heads hd JOIN sessions s ON s.id = hd.session_id WHERE hd.key = ?",
      )
      .get("agent:helper:gateway:side") as { agent: string } | undefined;
    expect(head?.agent).toBe("helper");
    const bad = await runCli(["chat", "--url", h.wsUrl, "--token", TOKEN, "--agent", "nobody"], "hi\n");
    expect(bad.stderr).toMatch(/unknown agent "nobody"/);
  }, 60_000);

  it("reads the gateway address and token from the config file; a bad token fails clearly", async () => {
    h.fake.enqueue({ text: "via config" });
    const ok = await runCli(["chat", "--config", h.configPath], "ping\n");
    expect(ok.stdout).toBe("via config\n");
    const bad = await runCli(["chat", "--config", h.configPath, "--token", "wrong"], "ping\n");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid gateway token/);
  }, 60_000);

  it("answers slash commands; Ctrl-C aborts the running reply and a second Ctrl-C exits", async () => {
    const p = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(ROOT, "cmd", "familiar.ts"),
        "chat",
        "--url",
        h.wsUrl,
        "--token",
        TOKEN,
        "--session",
        "interrupt",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, FAMILIAR_GATEWAY_URL: "", FAMILIAR_GATEWAY_TOKEN: "" },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => p.on("close", (code) => resolve(code)));
    try {
      const before = h.fake.requests.length;
      p.stdin.write("/help\n");
      await waitFor(() => stdout.includes("/new"));
      expect(h.fake.requests.length).toBe(before);

      h.fake.enqueue({ text: "Once upon a time ".repeat(200), chunkSize: 4, delayMs: 20 });
      const mark = stdout.length;
      p.stdin.write("tell me a long story\n");
      await waitFor(() => stdout.slice(mark).includes("Once upon"));
      p.kill("SIGINT");
      await waitFor(() => stdout.includes("[stopped]"));
      expect(stdout).toContain("(aborting; Ctrl-C again to exit)");
      // Still alive after the first Ctrl-C: the next line is answered.
      h.fake.enqueue({ text: "still here" });
      p.stdin.write("are you there?\n");
      await waitFor(() => stdout.includes("still here\n"));
      p.kill("SIGINT");
      expect(await exited).toBe(130);
      expect(stderr).toBe("");
    } finally {
      p.kill("SIGKILL");
    }
    const rows = h.daemon.db
      .prepare(
        "SELECT m.role, m.status FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? AND m.role = 'assistant' ORDER BY m.id",
      )
      .all("agent:main:gateway:interrupt") as { role: string; status: string }[];
    expect(rows.map((r) => r.status)).toEqual(["aborted", "ok"]);
  }, 60_000);

  it("familiar cron run runs a job in the daemon; cron runs lists it; an unknown job fails clearly", async () => {
    h.fake.enqueue({ text: "Plan: water the plants." });
    const r = await runCli(["cron", "run", "morning", "--config", h.configPath], "");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^#\d+ \S+ manual\s+ok\s+[\d.]+s [1-9]\d* tok {2}Plan: water the plants\.$/m);
    const runs = await runCli(["cron", "runs", "morning", "--json", "--config", h.configPath], "");
    expect(JSON.parse(runs.stdout)).toEqual([
      expect.objectContaining({
        jobId: "morning",
        trigger: "manual",
        status: "ok",
        sessionKey: "cron:morning",
      }),
    ]);
    const missing = await runCli(["cron", "run", "nope", "--config", h.configPath], "");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no cron job "nope"');
  }, 60_000);

  it("familiar status prints uptime, models, channels, queue depth, today's tokens, next heartbeat and cron runs", async () => {
    // One recorded heartbeat tick (no HEARTBEAT.md: skipped without a model call) shows as the last run.
    const hb = h.daemon.parts.extra.heartbeat as { runNow(): Promise<{ status: string }> };
    expect((await hb.runNow()).status).toBe("skipped");
    const r = await runCli(["status", "--config", h.configPath], "");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^uptime\s+/m);
    expect(r.stdout).toMatch(/^queue\s+0$/m);
    expect(r.stdout).toMatch(/^tokens today \d+/m);
    expect(r.stdout).toMatch(/^models\s+ok\s+chain fake\/test-model$/m);
    expect(r.stdout).toMatch(/^channels\s+\(none\)$/m);
    expect(r.stdout).toMatch(/^heartbeat\s+next .+ {2}last skipped .+ \(HEARTBEAT\.md is missing\)$/m);
    expect(r.stdout).toMatch(/^cron\s+1 job\(s\)$/m);
    expect(r.stdout).toMatch(/^\s+morning\s+next .+ {2}last ok$/m);
  }, 60_000);
});
