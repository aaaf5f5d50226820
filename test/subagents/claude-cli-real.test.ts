/**
 * The `claude-cli` engine against the real Claude Code CLI (`@anthropic-ai/claude-code`, a native
 * binary of about 400 MB, so not a dependency of the project), talking to a fake Anthropic Messages
 * API on 127.0.0.1 (test/fakes/anthropic-server.ts). `.ci/run` installs it, best effort, into
 * `${XDG_CACHE_HOME:-~/.cache}/familiar/claude-code`; `FAMILIAR_CLAUDE_BIN` or a `claude` on PATH
 * also serve. Without it the test is skipped, and its name says why.
 *
 * Shown here: a CLI session the CLI cannot resume (killed with SIGKILL during its first turn, its
 * transcript lost) makes the real CLI exit with `error_during_execution` ("No conversation found");
 * the engine falls back once to a fresh CLI session seeded with the stored conversation, and the turn
 * answers.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentHost } from "../../internal/agent/host.js";
import { ClaudeCliEngine } from "../../internal/agent/engines/claude-cli-engine.js";
import { normalizeUsage } from "../../internal/models/normalize-usage.js";
import { createLogger } from "../../internal/log/logger.js";
import type { ModelClient } from "../../internal/models/types.js";
import { createTestCore, type TestCore } from "../helpers/core.js";
import { lastUserText, startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-server.js";

/** Where `.ci/run` installs the CLI. */
export const CLAUDE_CACHE_DIR = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "familiar",
  "claude-code",
);

function findClaude(): string | undefined {
  const candidates = [
    process.env.FAMILIAR_CLAUDE_BIN,
    join(CLAUDE_CACHE_DIR, "node_modules", ".bin", "claude"),
    ...(process.env.PATH ?? "").split(delimiter).map((d) => join(d, "claude")),
  ];
  return candidates.find((c): c is string => !!c && existsSync(c));
}

const CLAUDE = findClaude();
const SKIP = CLAUDE
  ? ""
  : ` [skipped: the Claude Code CLI is not installed; set FAMILIAR_CLAUDE_BIN or run: npm install --prefix ${CLAUDE_CACHE_DIR} @anthropic-ai/claude-code]`;

// Said once on stderr as well: a skipped file's test names are not shown by the default reporter.
if (!CLAUDE) console.warn(`claude-cli-real.test.ts${SKIP}`);

const unusedModel: ModelClient = {
  // eslint-disable-next-line require-yield
  async *stream() {
    throw new Error("the model client must not be called for a claude-cli agent");
  },
};

/** Deletes the CLI's session transcripts under `dir`; returns how many there were. */
function removeTranscripts(dir: string): number {
  if (!existsSync(dir)) return 0;
  const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl"));
  for (const f of files) rmSync(join(dir, f));
  return files.length;
}

/** Pids of the live processes for which `test(pid)` holds (Linux /proc; ones that exit meanwhile are skipped). */
function pidsWhere(test: (pid: string) => boolean): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (test(name)) out.push(Number(name));
    } catch {
      /* exited meanwhile, or not ours to read */
    }
  }
  return out;
}

/** Pids of our own child processes running the CLI in stream-json mode. */
function claudeChildren(): number[] {
  return pidsWhere((pid) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return ppid === process.pid && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--output-format");
  });
}

/** Processes started with `HOME=<home>`: the real CLI and whatever it left running. */
function processesWithHome(home: string): number[] {
  return pidsWhere((pid) =>
    readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`HOME=${home}`),
  );
}

describe.skipIf(!CLAUDE)(`claude-cli engine with the real Claude Code CLI${SKIP}`, () => {
  let api: FakeAnthropic;
  let core: TestCore;
  let home: string;
  const saved: Record<string, string | undefined> = {};
  const lines: string[] = [];
  beforeAll(async () => {
    api = await startFakeAnthropic();
    home = mkdtempSync(join(tmpdir(), "claude-home-"));
    // The engine's subprocesses inherit this environment: a throwaway HOME (the CLI keeps its
    // sessions in ~/.claude), the fake API, and no traffic anywhere else.
    const env: Record<string, string> = {
      HOME: home,
      ANTHROPIC_BASE_URL: api.baseUrl,
      ANTHROPIC_API_KEY: api.apiKey,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    core = createTestCore({ agents: { main: { engine: "claude-cli" } } });
  });
  afterAll(async () => {
    core?.close();
    await api?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    // The real CLI may leave processes behind (the SIGKILLed one's children) that still write into
    // its home as the test ends (ENOTEMPTY seen in CI): stop them and wait until they are gone.
    for (const pid of processesWithHome(home)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    for (let i = 0; i < 200 && processesWithHome(home).length > 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    rmSync(home, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });

  it("a session killed before the CLI flushed it: --resume fails, the turn answers in a seeded fresh session", async () => {
    const logger = createLogger({
      destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) }),
      pretty: false,
    });
    const engine = new ClaudeCliEngine({
      command: CLAUDE as string,
      extraArgs: [],
      idleTtlMs: 600_000,
      partialMessages: true,
      cwd: core.dir,
      db: core.db,
      logger,
      normalizeUsage,
    });
    try {
      const h = createAgentHost({
        ctx: core.ctx,
        model: unusedModel,
        engines: { "claude-cli": engine.engine() },
        onReset: (k) => engine.reset(k),
      });
      const key = "agent:main:test:dm:real";
      // Turn 1: the API holds its answer; the CLI is killed mid-turn, as the OOM killer would.
      const arrived = api.holdNext("my name is Ada");
      const first = h.submit({ channel: "test", sessionKey: key, text: "my name is Ada" }).result;
      await arrived;
      const pids = claudeChildren();
      expect(pids).toHaveLength(1);
      process.kill(pids[0]!, "SIGKILL");
      const r1 = await first;
      expect(r1.finishReason).toBe("error");
      expect(r1.text).toMatch(/The Claude CLI stopped unexpectedly \(signal SIGKILL/);
      // Whether the CLI wrote part of that turn to its transcript before it died is a race (the
      // transcript is written around the API call); remove what it left, as when ~/.claude is lost or
      // not persisted, so the next --resume fails every time rather than most times.
      const removed = removeTranscripts(join(home, ".claude", "projects"));
      expect(removed).toBeLessThanOrEqual(1);

      // Turn 2: `--resume <id>` of the lost session fails in the real CLI; the engine starts a fresh
      // CLI session given the conversation from the store, and the turn answers.
      const before = api.requests.length;
      const r2 = await h.submit({ channel: "test", sessionKey: key, text: "what is my name?" }).result;
      expect(r2.finishReason, r2.text).toBe("stop");
      expect(r2.text).toContain("what is my name?");
      const sent = api.requests.slice(before).map(lastUserText);
      const seeded = sent.find((t) => t.includes("Conversation so far"));
      expect(seeded, JSON.stringify(sent.map((t) => t.slice(-200)))).toBeDefined();
      expect(seeded).toContain("User: my name is Ada");
      expect(seeded).toContain("Current message:\nwhat is my name?");
      const warned = lines.filter((l) => l.includes("resuming CLI session"));
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatch(
        /failed \(.*\); answering in a fresh CLI session seeded with 1 stored message\b/,
      );

      // Turn 3 resumes the new CLI session (it was flushed), with the plain message.
      const before3 = api.requests.length;
      const r3 = await h.submit({ channel: "test", sessionKey: key, text: "and again?" }).result;
      expect(r3.finishReason, r3.text).toBe("stop");
      expect(
        api.requests
          .slice(before3)
          .map(lastUserText)
          .some((t) => t.includes("Conversation so far")),
      ).toBe(false);
      expect(lines.filter((l) => l.includes("resuming CLI session"))).toHaveLength(1);
    } finally {
      engine.close();
    }
  });
});
