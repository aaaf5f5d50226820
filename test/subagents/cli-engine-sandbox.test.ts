/**
 * Invariant 3 (docs/security.md): the CLI engines run inside the boundary. A `claude-cli` agent gets
 * a minimal environment (its own API's variables, never the daemon's other secrets), runs in the
 * bubblewrap sandbox by default (its own HOME in the data dir, the host network shared), cannot read
 * outside the workspace or rewrite the project files it loads; only config.yaml can opt an agent
 * out. With test/fakes/fake-claude.mjs (it reports its environment and what it could read and write)
 * and, where installed, the real Claude Code CLI against a fake Anthropic API, whose planted
 * `.claude/settings.json` hook runs inside the sandbox only. Skipped where bwrap cannot run.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { wantsSandbox } from "../../internal/agent/engines/engine-launch.js";
import { cliProgramKey } from "../../internal/agent/catalog/file-agents.js";
import type { AgentDef } from "../../internal/agent/agents.js";
import { probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-server.js";
import { createSubagentHarness, modelsConfig, type SubagentHarness } from "./harness.js";

const FAKE_CLAUDE = resolve("test/fakes/fake-claude.mjs");
const status = await probeSandbox();
const skip = status.ok ? "" : ` (SKIPPED: ${status.problem ?? "no sandbox"})`;

const CLAUDE = [
  process.env.FAMILIAR_CLAUDE_BIN,
  join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
    "familiar",
    "claude-code",
    "node_modules",
    ".bin",
    "claude",
  ),
  ...(process.env.PATH ?? "").split(delimiter).map((d) => join(d, "claude")),
].find((c): c is string => !!c && existsSync(c));

const SECRETS = {
  OPENAI_API_KEY: "sk-openai-daemon-secret",
  TELEGRAM_BOT_TOKEN: "123:telegram-daemon-secret",
  FAMILIAR_GATEWAY_TOKEN: "familiar-daemon-secret",
  DISCORD_TOKEN: "discord-daemon-secret",
  ANTHROPIC_API_KEY: "sk-ant-for-the-cli",
  SOME_PLAIN_VAR: "plain-daemon-value",
};

let fake: FakeOpenAI;
let h: SubagentHarness | undefined;
const cleanup: string[] = [];
beforeAll(async () => {
  fake = await startFakeOpenAI();
  Object.assign(process.env, SECRETS);
});
afterAll(async () => {
  await fake.close();
  for (const k of Object.keys(SECRETS)) delete process.env[k];
});
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of cleanup.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A folder outside the workspace and outside the sandbox's private /tmp. */
function outsideDir(): string {
  const d = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "familiar-outside-"));
  cleanup.push(d);
  return d;
}

async function ask(hh: SubagentHarness, text: string, agentId = "main") {
  return hh.submit(text, undefined, { agentId, sessionKey: `agent:${agentId}:test:dm:owner` }).result;
}

describe.skipIf(!status.ok)(`claude-cli runs inside the sandbox${skip}`, () => {
  it("gets a minimal environment: its API key, its own HOME; no other secret of the daemon", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
    });
    const r = await ask(h, "ENV");
    expect(r.finishReason, r.text).toBe("stop");
    const env = JSON.parse(/ ENV=(\{.*\})$/s.exec(r.text)?.[1] ?? "{}") as Record<string, string>;
    expect(env.ANTHROPIC_API_KEY).toBe("sk-ant-for-the-cli");
    expect(env.HOME).toBe(join(h.core.ctx.config().data_dir, "engines", "main", "home"));
    for (const [k, v] of Object.entries(SECRETS)) {
      if (k === "ANTHROPIC_API_KEY") continue;
      expect(env[k], k).toBeUndefined();
      expect(r.text, k).not.toContain(v);
    }
    expect(Object.keys(env).filter((k) => k.startsWith("FAMILIAR_"))).toEqual([]);
  });

  it("cannot read outside the workspace, nor the daemon's environ; cannot rewrite CLAUDE.md or .claude/", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
    });
    const ws = h.core.ctx.config().workspace;
    const out = outsideDir();
    writeFileSync(join(out, "secret.txt"), "outside-secret");
    writeFileSync(join(ws, "CLAUDE.md"), "the owner's instructions");
    mkdirSync(join(ws, ".claude"), { recursive: true });
    writeFileSync(join(ws, ".claude", "settings.json"), "{}");
    writeFileSync(join(ws, "note.txt"), "inside-note");
    const cases: [string, RegExp][] = [
      [`READ:${join(out, "secret.txt")}`, /READ-FAILED=ENOENT/],
      [`READ:/proc/${process.pid}/environ`, /READ-FAILED=ENOENT/],
      [`READ:${join(h.core.ctx.config().data_dir, "familiar.db")}`, /READ-FAILED=ENOENT/],
      [`READ:${join(ws, "note.txt")}`, /READ=inside-note/],
      [`WRITE:${join(ws, "CLAUDE.md")}`, /WRITE-FAILED=EROFS/],
      [`WRITE:${join(ws, ".claude", "settings.json")}`, /WRITE-FAILED=EROFS/],
      [`WRITE:${join(out, "planted")}`, /WRITE-FAILED=(ENOENT|EROFS)/],
      ["USERNS", /USERNS=[1-9]/],
    ];
    for (const [text, want] of cases) {
      const r = await ask(h, text);
      expect(r.text, text).toMatch(want);
      expect(r.text, text).not.toContain("outside-secret");
      expect(r.text, text).not.toContain("sk-openai-daemon-secret");
    }
    expect(existsSync(join(out, "planted"))).toBe(false);
  });

  it("a new .envrc left by the CLI's own tools on the desk is held and asked about, like after exec; the mind is read-only", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
    });
    const ws = h.core.ctx.config().workspace;
    const desk = join(ws, "desk");
    const turn = ask(h, `WRITE:${join(desk, ".envrc")}`);
    await h.channel.waitFor(1);
    const q = h.channel.sent[0];
    expect(q?.text).toContain("Approval needed (planted)");
    expect(q?.text).toContain(".envrc (");
    h.tools.approvals.resolve(q?.opts?.approvalId ?? "", "denied");
    const r = await turn;
    expect(r.text).toContain("WROTE");
    expect(r.text).toContain("[the owner declined: 1 file (hidden) deleted]");
    expect(existsSync(join(desk, ".envrc"))).toBe(false);
    // A turn that writes plain data asks nothing; one that writes the mind cannot.
    const plain = await ask(h, `WRITE:${join(desk, "notes.txt")}`);
    expect(plain.text).toContain("WROTE");
    expect((await ask(h, `WRITE:${join(ws, "AGENTS.md")}`)).text).toMatch(/WRITE-FAILED=EROFS/);
    expect(h.channel.sent.filter((m) => m.text.includes("Approval needed"))).toHaveLength(1);
  });

  it("an agent whose sandbox is not available gets one clear error turn, not an unsandboxed CLI", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
      tools: { exec: { sandbox: { enabled: false } } },
    });
    const r = await ask(h, "ENV");
    expect(r.finishReason).toBe("error");
    expect(r.error?.code).toBe("ENGINE_SANDBOX_UNAVAILABLE");
    expect(r.text).toContain("set sandbox: false on agent main in config.yaml");
    expect(r.text).not.toContain("ENV=");
  });

  it("sandbox: false in config.yaml runs it outside, still with the minimal environment and pass_env", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: {
        main: { engine: "claude-cli", command: FAKE_CLAUDE, sandbox: false, pass_env: ["SOME_PLAIN_VAR"] },
      },
    });
    const out = outsideDir();
    writeFileSync(join(out, "secret.txt"), "readable-unsandboxed");
    const r = await ask(h, `ENV READ:${join(out, "secret.txt")}`);
    expect(r.text).toContain("READ=readable-unsandboxed");
    const env = JSON.parse(/ ENV=(\{.*\}) READ/s.exec(r.text)?.[1] ?? "{}") as Record<string, string>;
    expect(env.SOME_PLAIN_VAR).toBe("plain-daemon-value");
    expect(env.HOME).toBe(process.env.HOME);
    expect(env.OPENAI_API_KEY).toBeUndefined();
    expect(env.TELEGRAM_BOT_TOKEN).toBeUndefined();
  });

  it("the `cli` engine runs sandboxed too", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: {
        main: {},
        shell: { engine: "cli", command: "/bin/sh", args: ["-c", 'env; cat "$0" 2>&1; id -u'] },
      },
    });
    const out = outsideDir();
    writeFileSync(join(out, "s.txt"), "outside-secret");
    const r = await ask(h, join(out, "s.txt"), "shell");
    expect(r.text).not.toContain("outside-secret");
    expect(r.text).toContain("No such file or directory");
    expect(r.text).not.toContain("sk-openai-daemon-secret");
    expect(r.text).not.toContain("sk-ant-for-the-cli");
  });
});

describe.skipIf(!status.ok)(`what a CLI agent's sandbox shows of the daemon's folders${skip}`, () => {
  it("a program in the owner's home shows only itself, not the home", async () => {
    const home = outsideDir();
    writeFileSync(join(home, "secret.txt"), "home-secret");
    writeFileSync(join(home, "tool.sh"), `#!/bin/sh\nls ${home}; cat ${home}/secret.txt 2>&1; echo ran\n`, {
      mode: 0o755,
    });
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      h = await createSubagentHarness({
        models: modelsConfig(fake.baseUrl),
        agents: { main: {}, tool: { engine: "cli", command: join(home, "tool.sh") } },
      });
      const r = await ask(h, "go", "tool");
      expect(r.text).toContain("ran");
      expect(r.text).toContain("tool.sh");
      expect(r.text).not.toContain("home-secret");
      expect(r.text).not.toContain("secret.txt\n");
    } finally {
      process.env.HOME = saved;
    }
  });

  it("a granted rw folder holding the data dir does not show the data dir; the engine's home still works", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
    });
    const dataDir = h.core.ctx.config().data_dir;
    h.core.setConfig({
      models: modelsConfig(fake.baseUrl),
      agents: { main: { engine: "claude-cli", command: FAKE_CLAUDE } },
      tools: { exec: { sandbox: { rw: [dirname(dataDir)] } } },
    });
    const r = await ask(h, `READ:${join(dataDir, "familiar.db")} ENV`);
    expect(r.text).toMatch(/READ-FAILED=(ENOENT|EACCES)/);
    expect(r.text).toContain(`"HOME":"${join(dataDir, "engines", "main", "home")}"`);
    const ls = await h.callTool("exec", { command: `ls -a ${dataDir}` });
    expect(ls.content).not.toContain("familiar.db");
  });
});

describe("only config.yaml can take an agent out of the sandbox", () => {
  const agent = (over: Partial<AgentDef>): AgentDef => ({ id: "x", source: "config", ...over }) as AgentDef;
  it("honours sandbox: false from config.yaml, never from an agent file or the API", () => {
    expect(wantsSandbox(agent({}))).toBe(true);
    expect(wantsSandbox(agent({ sandbox: false }))).toBe(false);
    expect(wantsSandbox(agent({ sandbox: false, source: "file:agents/x.yaml" }))).toBe(true);
    expect(wantsSandbox(agent({ sandbox: false, source: "api" }))).toBe(true);
  });

  it("an agent file or API agent that says sandbox: false or pass_env is refused, naming the key", () => {
    const base = { args: [], extra_args: [] };
    expect(cliProgramKey({ ...base, sandbox: false })).toBe("sandbox");
    expect(cliProgramKey({ ...base, pass_env: ["OPENAI_API_KEY"] })).toBe("pass_env");
    expect(cliProgramKey({ ...base, sandbox: true, pass_env: [] })).toBeUndefined();
  });
});

describe.skipIf(!status.ok || !CLAUDE)(
  `the real Claude Code CLI in the sandbox${CLAUDE ? "" : " (SKIPPED: the Claude Code CLI is not installed)"}${skip}`,
  () => {
    let api: FakeAnthropic;
    beforeAll(async () => {
      api = await startFakeAnthropic({ apiKey: "sk-ant-for-the-cli" });
      process.env.ANTHROPIC_BASE_URL = api.baseUrl;
      process.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1";
      process.env.DISABLE_AUTOUPDATER = "1";
      process.env.DISABLE_TELEMETRY = "1";
    });
    afterAll(async () => {
      await api.close();
      for (const k of [
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "DISABLE_AUTOUPDATER",
        "DISABLE_TELEMETRY",
      ])
        delete process.env[k];
    });

    it("answers a turn; a planted .claude/settings.json hook runs inside the sandbox only", async () => {
      h = await createSubagentHarness({
        models: modelsConfig(fake.baseUrl),
        agents: { main: { engine: "claude-cli", command: CLAUDE } },
      });
      // The CLI runs on the desk: the project settings it loads are the desk's.
      const ws = join(h.core.ctx.config().workspace, "desk");
      const out = outsideDir();
      const hook = `touch ${join(out, "PWNED")}; touch ${join(ws, "HOOK-RAN.txt")}`;
      mkdirSync(join(ws, ".claude"), { recursive: true });
      const settings = { hooks: {} as Record<string, unknown> };
      for (const ev of ["SessionStart", "UserPromptSubmit", "Stop"])
        settings.hooks[ev] = [{ hooks: [{ type: "command", command: hook }] }];
      writeFileSync(join(ws, ".claude", "settings.json"), JSON.stringify(settings));
      const r = await ask(h, "hello from the sandbox");
      expect(r.finishReason, r.text).toBe("stop");
      expect(r.text).toContain("answer:");
      expect(existsSync(join(out, "PWNED"))).toBe(false);
      // The hook did run, inside: the desk is the one place it could write to.
      expect(existsSync(join(ws, "HOOK-RAN.txt"))).toBe(true);
      // The CLI kept its state in its own home in the data dir, not the owner's ~/.claude.
      const home = join(h.core.ctx.config().data_dir, "engines", "main", "home");
      expect(readdirSync(home).length).toBeGreaterThan(0);
    }, 120_000);
  },
);
