/**
 * Drives the real OpenClaw program (installed from the npm registry, see `.ci/run`) headless to write
 * the state an owner moving to Familiar would bring: onboarding against the fake OpenAI server, a
 * Telegram channel pointed at the fake Telegram server with an allowlist and a pairing approval,
 * heartbeat and fallback settings, a cron job, personality files, memory notes, a skill and a few
 * conversations through the gateway. Everything is written by OpenClaw's own CLI and gateway except
 * the workspace Markdown files and the skill folder, which an owner writes by hand in OpenClaw too.
 *
 * Used by test/importer/openclaw-real.test.ts and by `test/fixtures/openclaw/make-fixture.ts`
 * (which refreshes the fast suite's fixture from a real run).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { FakeTelegramServer } from "../fakes/telegram-server.js";

/** The cached install `.ci/run` makes (Node 24 and openclaw@2026.9.6). */
export function openclawInstall(): { node: string; bin: string } | { missing: string } {
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "familiar");
  const node = join(cache, "node24", "node_modules", "node", "bin", "node");
  const bin = join(cache, "openclaw", "node_modules", "openclaw", "openclaw.mjs");
  if (!existsSync(node)) return { missing: `Node 24 is not installed at ${node} (.ci/run installs it)` };
  if (!existsSync(bin)) return { missing: `openclaw is not installed at ${bin} (.ci/run installs it)` };
  return { node, bin };
}

export interface DriveOptions {
  node: string;
  bin: string;
  /** The OpenClaw state dir to create (OPENCLAW_STATE_DIR). */
  stateDir: string;
  /** HOME for the program (kept apart from the real one). */
  home: string;
  /** Fake OpenAI base URL (…/v1). */
  modelUrl: string;
  telegram: FakeTelegramServer;
  gatewayPort: number;
  log?: (line: string) => void;
}

/** What the driven program produced, for the test to check after import. */
export interface DriveResult {
  ownerId: string;
  approvedId: string;
  strangerId: string;
  fact: string;
}

export const OWNER_ID = "111111111";
export const APPROVED_ID = "222222222";
export const STRANGER_ID = "333333333";
export const TELEGRAM_TOKEN = "123456:openclaw-fake-token";

interface RunResult {
  code: number | null;
  out: string;
}

function run(o: DriveOptions, args: string[], timeoutMs = 180_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(o.node, [o.bin, ...args], { env: envOf(o), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      o.log?.(`$ openclaw ${args.join(" ")} -> ${code}\n${out.slice(-2000)}`);
      resolve({ code, out });
    });
  });
}

async function must(o: DriveOptions, args: string[], timeoutMs?: number): Promise<string> {
  const r = await run(o, args, timeoutMs);
  if (r.code !== 0) throw new Error(`openclaw ${args.join(" ")} exited ${r.code}:\n${r.out.slice(-3000)}`);
  return r.out;
}

function envOf(o: DriveOptions): NodeJS.ProcessEnv {
  return {
    PATH: `${join(o.node, "..")}:/usr/bin:/bin`,
    HOME: o.home,
    OPENCLAW_STATE_DIR: o.stateDir,
    NO_COLOR: "1",
    CI: "1",
  };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Writes the owner's workspace files, notes and a skill (by hand, as an OpenClaw owner does). */
function writeWorkspace(ws: string): void {
  writeFileSync(
    join(ws, "SOUL.md"),
    "# SOUL.md\n\nYou are Quill, a dry-witted assistant who answers in at most three sentences.\n" +
      "Never use exclamation marks.\n",
  );
  writeFileSync(join(ws, "USER.md"), "# USER.md\n\n- Name: Robin\n- Lives in Lisbon, works as a luthier.\n");
  writeFileSync(
    join(ws, "MEMORY.md"),
    "# MEMORY.md\n\n- Robin's workshop key code is kept in the blue notebook, not here.\n- Robin prefers tea over coffee.\n",
  );
  writeFileSync(
    join(ws, "HEARTBEAT.md"),
    "# HEARTBEAT.md\n\n- Check whether the varnish order has shipped.\n",
  );
  mkdirSync(join(ws, "memory"), { recursive: true });
  writeFileSync(
    join(ws, "memory", "2026-11-20.md"),
    "# 2026-11-20\n\n- Finished the spruce top for the commission from Porto.\n",
  );
  const skill = join(ws, "skills", "tide-check");
  mkdirSync(join(skill, "scripts"), { recursive: true });
  writeFileSync(
    join(skill, "SKILL.md"),
    "---\nname: tide-check\ndescription: Look up today's tides for Lisbon before a beach walk.\n---\n\n" +
      "Run `scripts/tides.sh` and summarise high and low tide.\n",
  );
  writeFileSync(join(skill, "scripts", "tides.sh"), "#!/bin/sh\necho 'high 09:12, low 15:40'\n", {
    mode: 0o755,
  });
  const notes = join(ws, "skills", "packing-list");
  mkdirSync(notes, { recursive: true });
  writeFileSync(
    join(notes, "SKILL.md"),
    "---\nname: packing-list\ndescription: Make a packing list for a trip from the weather and its length.\n---\n\n" +
      "Ask for the destination and the number of nights, then list clothes, documents and chargers.\n",
  );
}

/**
 * Builds the whole state. Leaves no process running (the gateway is stopped before returning).
 */
export async function driveOpenClaw(o: DriveOptions): Promise<DriveResult> {
  mkdirSync(o.home, { recursive: true });
  await must(o, [
    "onboard",
    "--non-interactive",
    "--accept-risk",
    "--mode",
    "local",
    "--auth-choice",
    "custom-api-key",
    "--custom-base-url",
    o.modelUrl,
    "--custom-api-key",
    "sk-openclaw-fake-model-key",
    "--custom-model-id",
    "gpt-4o-mini",
    "--custom-provider-id",
    "fakeai",
    "--custom-compatibility",
    "openai",
    "--skip-channels",
    "--skip-daemon",
    "--no-install-daemon",
    "--skip-health",
    "--skip-search",
    "--skip-skills",
    "--skip-ui",
    "--skip-hooks",
    "--gateway-port",
    String(o.gatewayPort),
    "--gateway-bind",
    "loopback",
    "--json",
  ]);
  const ws = join(o.stateDir, "workspace");
  writeWorkspace(ws);
  const batch = [
    // A second OpenAI-compatible provider and one that is not (Anthropic's Messages API), both as
    // fallbacks, so the import has one of each to map or to refuse.
    {
      path: "models.providers.ollama-box",
      value: {
        baseUrl: "http://127.0.0.1:11434/v1",
        api: "openai-completions",
        apiKey: "ollama-local",
        models: [{ id: "llama3.1:8b", name: "Llama 3.1 8B", contextWindow: 131072, maxTokens: 4096 }],
      },
    },
    {
      path: "models.providers.claude-direct",
      value: {
        baseUrl: "https://api.anthropic.com",
        api: "anthropic-messages",
        apiKey: "sk-ant-openclaw-fake",
        models: [
          { id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", contextWindow: 200000, maxTokens: 8192 },
        ],
      },
    },
    {
      path: "agents.defaults.model.fallbacks",
      value: ["claude-direct/claude-sonnet-4-5", "ollama-box/llama3.1:8b"],
    },
    {
      path: "agents.defaults.heartbeat",
      value: { every: "2h", target: "last", activeHours: { start: "08:00", end: "22:00" } },
    },
    {
      path: "channels.telegram",
      value: {
        enabled: true,
        botToken: TELEGRAM_TOKEN,
        apiRoot: o.telegram.apiRoot,
        dmPolicy: "pairing",
        allowFrom: [OWNER_ID],
        groupPolicy: "allowlist",
        groups: { "-1001234567890": { requireMention: true } },
      },
    },
  ];
  await must(o, ["config", "set", "--batch-json", JSON.stringify(batch)]);

  const gateway = spawn(
    o.node,
    [o.bin, "gateway", "run", "--port", String(o.gatewayPort), "--allow-unconfigured"],
    {
      env: envOf(o),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let gwLog = "";
  gateway.stdout?.on("data", (d: Buffer) => (gwLog += d.toString()));
  gateway.stderr?.on("data", (d: Buffer) => (gwLog += d.toString()));
  try {
    await waitFor(
      "the OpenClaw gateway",
      async () => {
        if (gateway.exitCode !== null)
          throw new Error(`gateway exited ${gateway.exitCode}:\n${gwLog.slice(-3000)}`);
        try {
          const r = await fetch(`http://127.0.0.1:${o.gatewayPort}/healthz`);
          return r.ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      600_000,
    );
    const fact = "My sister Ilse's birthday is on the 14th of March and she loves marzipan.";
    for (const [key, text] of [
      ["agent:main:robin-chat", fact],
      ["agent:main:robin-chat", "Remind me which glue I used for the bridge: hide glue from Hungary."],
      ["agent:main:workshop", "The Porto commission is due before Christmas."],
    ] as const)
      await must(o, ["agent", "--session-key", key, "--message", text, "--json"], 240_000);

    // A stranger writes to the bot: OpenClaw answers with a pairing code, which the owner approves.
    o.telegram.pushText({ id: Number(APPROVED_ID), first_name: "Sam" }, "hello, may I talk to you?");
    const code = await waitFor(
      "a pairing code sent to the second user",
      async () => {
        const m = o.telegram
          .visible(APPROVED_ID)
          .map((x) => x.text)
          .join("\n");
        return /\b([A-Z2-9]{8})\b/.exec(m)?.[1];
      },
      120_000,
    );
    await must(o, ["pairing", "approve", "telegram", code]);
    await must(o, [
      "cron",
      "add",
      "--name",
      "morning-brief",
      "--cron",
      "30 7 * * 1-5",
      "--tz",
      "Europe/Lisbon",
      "--message",
      "Summarise my day and the varnish order.",
      "--channel",
      "telegram",
      "--to",
      OWNER_ID,
      "--announce",
      "--session",
      "isolated",
      "--port",
      String(o.gatewayPort),
    ]);
    await sleep(500);
    return { ownerId: OWNER_ID, approvedId: APPROVED_ID, strangerId: STRANGER_ID, fact };
  } finally {
    await stop(gateway);
    killLeftovers(o.home);
  }
}

/** SIGKILLs what the program left running: processes whose HOME is our private one (only ours have it). */
function killLeftovers(home: string): void {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return; // no /proc: nothing to scan
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(`HOME=${home}`))
        process.kill(Number(pid), "SIGKILL");
    } catch {
      /* gone, or not ours to read */
    }
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  const done = new Promise<void>((r) => child.once("close", () => r()));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await done;
  clearTimeout(t);
}
