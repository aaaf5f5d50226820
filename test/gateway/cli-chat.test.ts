/**
 * `familiar chat` and `familiar status` as real child processes against a real daemon, with piped stdin;
 * and `familiar chat` living through restarts of the daemon as a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { lastUserOf as lastUser, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { cleanupDaemons, cliCommand, startDaemonProcess, type DaemonProcess } from "../helpers/daemon.js";
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
let llm: FakeOpenAI | undefined;
afterAll(async () => {
  await h?.close();
  await cleanupDaemons();
  await llm?.close();
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

  it("--verbose prints each reply's request id, the one familiar trace and sessions show know", async () => {
    h.fake.enqueue({ text: "traced reply" });
    const r = await runCli(
      ["chat", "--url", h.wsUrl, "--token", TOKEN, "--session", "verbose", "--verbose"],
      "hello\n",
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const m = /^traced reply\n\(request (\S+); its call tree: familiar trace \1\)\n$/.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    const row = h.daemon.db
      .prepare(
        "SELECT m.request_id FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? AND m.role = 'assistant'",
      )
      .get("agent:main:gateway:verbose") as { request_id: string };
    expect(row.request_id).toBe(m![1]);
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

  it("reads input while a turn runs: /approve typed mid-turn settles the approval the turn waits for", async () => {
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
        "approve-mid-turn",
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
      // The model asks to write .envrc, which needs the owner's approval even in the sandbox.
      h.fake.enqueue(
        { toolCalls: [{ name: "write_file", arguments: { path: "desk/.envrc", content: "export A=1\n" } }] },
        { text: "written" },
      );
      p.stdin.write("write my .envrc\n");
      const asked = await waitFor(() => /type \/approve (\S+) or \/deny/.exec(stdout) ?? undefined);
      // Typed while the turn waits: settled at once, and the turn goes on to its reply.
      p.stdin.write(`/approve ${asked[1]}\n`);
      await waitFor(() => stdout.includes("written\n"));
      expect(stdout).toContain(`(Approved ${asked[1]}.)`);
      p.stdin.end();
      expect(await exited).toBe(0);
      expect(stderr).toBe("");
    } finally {
      p.kill("SIGKILL");
    }
  }, 60_000);

  it("familiar cron run runs a job in the daemon; cron runs lists it; an unknown job fails clearly", async () => {
    h.fake.enqueue({ text: "Plan: water the plants." });
    const r = await runCli(["cron", "run", "morning", "--config", h.configPath], "");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^#\d+ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d manual\s+ok\s+[\d.]+s [1-9]\d* tok {2}Plan: water the plants\.$/m,
    );
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
    const hb = h.daemon.parts.heartbeat;
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

describe("familiar chat across daemon restarts", () => {
  it("reconnects to the same session, sends a line typed while down once, finishes a cut-off reply, and Ctrl-C quits while reconnecting", async () => {
    const fake = await startFakeOpenAI();
    llm = fake;
    const story = Array.from({ length: 40 }, (_, i) => `part${i}`).join(" ");
    fake.setHandler((req) => {
      const text = lastUser(req);
      // The long reply streams slowly, so the daemon can be killed in the middle of it.
      if (text === "tell the long story") return { text: story, chunkSize: 4, delayMs: 40 };
      return { text: `echo: ${text}` };
    });
    const token = "chat-restart-token-123456";
    const config = {
      models: {
        providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
        primary: "fake/test-model",
        max_retries: 0,
        timeout_s: 60,
      },
      gateway: { token },
    };
    let daemon: DaemonProcess = await startDaemonProcess({ config });
    const restart = async (): Promise<void> => {
      daemon = await startDaemonProcess({ config, dir: daemon.dir, port: daemon.port });
    };
    const [cmd, ...args] = cliCommand();
    const p = spawn(
      cmd!,
      [
        ...args,
        "chat",
        "--url",
        `ws://127.0.0.1:${daemon.port}/ws`,
        "--token",
        token,
        "--session",
        "lasting",
      ],
      { cwd: ROOT, env: { ...process.env, FAMILIAR_GATEWAY_URL: "", FAMILIAR_GATEWAY_TOKEN: "" } },
    );
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => p.on("close", (code) => resolve(code)));
    const count = (hay: string, needle: string): number => hay.split(needle).length - 1;
    try {
      p.stdin.write("before\n");
      await waitFor(() => stdout.includes("echo: before\n"), 30_000);

      // A clean restart while idle; a line typed during the outage goes out after the reconnect.
      await daemon.stop();
      await waitFor(() => stderr.includes("reconnecting…"), 30_000);
      p.stdin.write("while down\n");
      await waitFor(() => stderr.includes("will be sent once reconnected"), 30_000);
      await restart();
      await waitFor(() => stdout.includes("echo: while down\n"), 30_000);
      expect(count(stderr, "reconnecting…")).toBe(1);
      expect(count(stderr, "familiar chat: reconnected")).toBe(1);

      // A crash in the middle of a streamed reply: the daemon resumes the turn after its restart and
      // the chat prints the rest of that one reply, not a second run of it.
      const mark = stdout.length;
      p.stdin.write("tell the long story\n");
      await waitFor(() => stdout.slice(mark).includes("part2 "), 30_000);
      await daemon.kill9();
      await waitFor(() => count(stderr, "reconnecting…") === 2, 30_000);
      await restart();
      await waitFor(() => stdout.slice(mark).includes("part39\n"), 60_000);
      expect(stdout.slice(mark)).toBe(`${story}\n`);
      p.stdin.write("after\n");
      await waitFor(() => stdout.includes("echo: after\n"), 30_000);
      expect(stdout).toBe(`echo: before\necho: while down\n${story}\necho: after\n`);
      expect(count(stderr, "familiar chat: reconnected")).toBe(2);

      // One session throughout, every line once.
      const db = new Database(join(daemon.dataDir, "familiar.db"), { readonly: true });
      try {
        const rows = db
          .prepare(
            "SELECT m.role, m.content FROM messages m JOIN session_heads hd ON hd.session_id = m.session_id WHERE hd.key = ? AND m.role IN ('user', 'assistant') AND m.status = 'ok' ORDER BY m.id",
          )
          .all("agent:main:gateway:lasting") as { role: string; content: string }[];
        expect(rows.filter((r) => r.role === "user").map((r) => r.content)).toEqual([
          "before",
          "while down",
          "tell the long story",
          "after",
        ]);
        expect(rows.filter((r) => r.role === "assistant").map((r) => r.content)).toEqual([
          "echo: before",
          "echo: while down",
          story,
          "echo: after",
        ]);
      } finally {
        db.close();
      }

      // Down again: Ctrl-C while reconnecting quits at once, saying the typed line was not sent.
      await daemon.stop();
      await waitFor(() => count(stderr, "reconnecting…") === 3, 30_000);
      p.stdin.write("never sent\n");
      await waitFor(() => count(stderr, "will be sent once reconnected") === 2, 30_000);
      p.kill("SIGINT");
      expect(await exited).toBe(130);
      expect(stderr).toContain("your last message was not sent");
    } finally {
      p.kill("SIGKILL");
    }
  }, 180_000);
});
