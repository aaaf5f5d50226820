/**
 * `familiar init`, `config check` and `doctor`, run as the user runs them: the real CLI in a child
 * process, against real files and (for doctor) the fake OpenAI-compatible server on 127.0.0.1.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { freePort, REPO_ROOT, runCli } from "./helpers/daemon.js";

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<CliResult> {
  return runCli(args, opts.cwd, opts.env);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "familiar-cli-"));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

describe("familiar init", () => {
  it("writes config.yaml and the workspace template, which then pass config check", async () => {
    const dir = tempDir();
    const target = join(dir, "home");
    const r = await cli(["init", target], { cwd: dir });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Wrote home/config.yaml and home/workspace/ (7 files).");
    expect(readFileSync(join(target, "config.yaml"), "utf8")).toBe(
      readFileSync(join(REPO_ROOT, "internal/config/config-template.yaml"), "utf8"),
    );
    for (const f of ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md"])
      expect(readFileSync(join(target, "workspace", f), "utf8")).toBe(
        readFileSync(join(REPO_ROOT, "workspace", f), "utf8"),
      );
    // The agent's own files (MEMORY.md, memory/) are created when it first writes them.
    expect(existsSync(join(target, "workspace/MEMORY.md"))).toBe(false);
    expect(readFileSync(join(target, "workspace/skills/README.md"), "utf8")).toContain("SKILL.md");

    const check = await cli(["config", "check"], { cwd: target });
    expect(check).toMatchObject({ code: 0, stderr: "" });
    expect(check.stdout).toBe(
      "config OK: ./config.yaml (gateway 127.0.0.1:18790, no provider (echo model), channels: none)\n",
    );
  });

  it("defaults to the current directory and refuses to overwrite anything", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "workspace"));
    writeFileSync(join(dir, "workspace", "SOUL.md"), "my own soul\n");
    const r = await cli(["init"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^familiar init: refusing to overwrite existing files in \. \(nothing was written\):\n {2}workspace\/SOUL\.md\n/,
    );
    expect(readFileSync(join(dir, "workspace", "SOUL.md"), "utf8")).toBe("my own soul\n");
    expect(() => readFileSync(join(dir, "config.yaml"))).toThrow(/ENOENT/);
  });
});

describe("familiar config check", () => {
  it("prints all three mistakes with their paths and exits 1", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "config.yaml"),
      [
        "gateway:",
        "  port: abc",
        "channels:",
        "  telegram:",
        "    enabled: true",
        "    dm_policy: everybody",
        "heartbeat:",
        "  evry: 10m",
        "",
      ].join("\n"),
    );
    const r = await cli(["config", "check", "--config", join(dir, "config.yaml")], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      [
        `config INVALID: ${join(dir, "config.yaml")}: 3 errors`,
        '  gateway.port: expected an integer 1-65535, got "abc"',
        '  channels.telegram.dm_policy: expected one of "pairing", "allowlist", "open", "disabled", got "everybody"',
        '  heartbeat.evry: unknown key (did you mean "every"?)',
        "",
      ].join("\n"),
    );
  });

  it("reports errors across keys together with field errors, in one pass", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "config.yaml"),
      [
        "gateway:",
        "  bind: 0.0.0.0",
        "  port: abc",
        "models:",
        "  providers:",
        "    openai: {base_url: https://api.openai.com/v1, timeout_s: -1}",
        "  primary: opnai/gpt-4o",
        "  fallbacks: [bad, openai/gpt-4o-mini, local/llama]",
        "",
      ].join("\n"),
    );
    const r = await cli(["config", "check"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      [
        "config INVALID: ./config.yaml: 5 errors",
        '  gateway.port: expected an integer 1-65535, got "abc"',
        "  models.providers.openai.timeout_s: expected a number > 0, got -1",
        '  models.fallbacks[0]: expected a model reference <provider>/<model>, got "bad"',
        '  models.primary: provider "opnai" is not configured: expected a provider from models.providers (openai), got "opnai/gpt-4o"',
        '  models.fallbacks[2]: provider "local" is not configured: expected a provider from models.providers (openai), got "local/llama"',
        "",
      ].join("\n"),
    );
  });

  it("summarises a valid config on one line", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "my.yaml"),
      [
        "models:",
        "  providers:",
        "    openai: {base_url: https://api.openai.com/v1, api_key: '${OPENAI_API_KEY}'}",
        "  primary: openai/gpt-4o-mini",
        "channels:",
        "  telegram: {enabled: true, token: '${TG_TOKEN}'}",
        "",
      ].join("\n"),
    );
    const r = await cli(["config", "check", "-c", "my.yaml"], {
      cwd: dir,
      env: { OPENAI_API_KEY: "sk-test", TG_TOKEN: "1:abc" },
    });
    expect(r).toEqual({
      code: 0,
      stdout: "config OK: my.yaml (gateway 127.0.0.1:18790, 1 provider, channels: telegram)\n",
      stderr: "",
    });
  });

  it("refuses a primary or an agent model whose provider is not configured, and the daemon refuses it the same way", async () => {
    const dir = tempDir();
    const port = await freePort();
    writeFileSync(
      join(dir, "config.yaml"),
      [
        `data_dir: ${join(dir, "data")}`,
        `workspace: ${join(dir, "ws")}`,
        `gateway: {port: ${port}}`,
        "models:",
        "  primary: openai/gpt-4o-mini",
        "agents:",
        "  helper: {model: anthropic/claude-haiku}",
        "",
      ].join("\n"),
    );
    const lines = [
      '  agents.helper.model: provider "anthropic" is not configured: expected a provider from models.providers (none configured), got "anthropic/claude-haiku"',
      '  models.primary: provider "openai" is not configured: expected a provider from models.providers (none configured), got "openai/gpt-4o-mini"',
    ];
    const check = await cli(["config", "check"], { cwd: dir });
    expect(check.code).toBe(1);
    expect(
      check.stderr
        .split("\n")
        .filter((l) => l.startsWith("  "))
        .sort(),
    ).toEqual(lines);
    // The daemon does not start on it (it used to answer with the echo model instead).
    const run = await cli(["run", "--config", "config.yaml"], { cwd: dir });
    expect(run.code).toBe(1);
    for (const l of lines) expect(run.stderr).toContain(l.trim());
  });

  it("flags what the daemon would refuse at start, and names a missing variable", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "config.yaml"),
      "gateway: {bind: 0.0.0.0}\nmodels:\n  providers: {a: {base_url: 'http://127.0.0.1:1/v1'}}\n  primary: b/x\n",
    );
    const r = await cli(["config", "check"], { cwd: dir });
    expect(r.code).toBe(1);
    // A non-loopback bind needs no explicit token any more: the daemon generates one.
    expect(r.stderr).not.toContain("gateway.token");
    expect(r.stderr).toContain(
      'models.primary: provider "b" is not configured: expected a provider from models.providers (a), got "b/x"',
    );

    writeFileSync(join(dir, "config.yaml"), "channels:\n  discord:\n    token: ${DISCORD_TOKEN}\n");
    const missing = await cli(["config", "check"], { cwd: dir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("channels.discord.token: environment variable DISCORD_TOKEN is not set");
  });
});

describe("familiar doctor", () => {
  let fake: FakeOpenAI | undefined;

  async function setup(extra: string): Promise<{ dir: string; config: string }> {
    const dir = tempDir();
    mkdirSync(join(dir, "workspace"));
    writeFileSync(join(dir, "workspace", "AGENTS.md"), "# rules\n");
    const port = await freePort();
    writeFileSync(join(dir, "config.yaml"), `gateway:\n  port: ${port}\n${extra}`);
    // Owner-only, as `familiar init` makes them (doctor warns about a loose mode, invariant 5).
    chmodSync(dir, 0o700);
    chmodSync(join(dir, "workspace"), 0o700);
    chmodSync(join(dir, "config.yaml"), 0o600);
    return { dir, config: join(dir, "config.yaml") };
  }

  function line(out: string, name: string): string | undefined {
    return out.split("\n").find((l) => l.slice(6).startsWith(`${name}:`));
  }

  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it("passes with a reachable provider that accepts the key", async () => {
    // A model the shipped price table does not know (it knows gpt-4o-mini).
    fake = await startFakeOpenAI({ apiKey: "sk-good", models: ["house-model"] });
    const { dir } = await setup(
      `models:\n  providers:\n    fake: {base_url: "${fake.baseUrl}", api_key: "\${FAKE_KEY}"}\n  primary: fake/house-model\n`,
    );
    const r = await cli(["doctor"], { cwd: dir, env: { FAKE_KEY: "sk-good" } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(line(r.stdout, "node")).toMatch(/^ok {4}node: \d+\.\d+\.\d+ \(>= 22\.22\)$/);
    expect(line(r.stdout, "config")).toMatch(
      /^ok {4}config: \.\/config\.yaml \(gateway 127\.0\.0\.1:\d+, 1 provider/,
    );
    expect(line(r.stdout, "data_dir")).toBe(`ok    data_dir: ${join(dir, "data")} is writable`);
    expect(line(r.stdout, "workspace")).toBe(`ok    workspace: ${join(dir, "workspace")} (AGENTS.md)`);
    expect(line(r.stdout, "gateway")).toMatch(
      /^ok {4}gateway: 127\.0\.0\.1:\d+ is free \(token: .*gateway-token, generated\)$/,
    );
    expect(line(r.stdout, "provider fake")).toBe("ok    provider fake: reachable, key accepted (1 models)");
    expect(line(r.stdout, "private files")).toBe(
      "ok    private files: data dir, database, workspace and config are owner-only",
    );
    expect(line(r.stdout, "workspace links")).toBe(
      "ok    workspace links: no symbolic links where the daemon reads",
    );
    // No models.pricing entry: budgets count it at the default price, and doctor says so.
    expect(line(r.stdout, "pricing")).toMatch(
      /^warn {2}pricing: no price for fake\/house-model in models\.pricing: their calls count at the default price \(\$5 input \/ \$15 output/,
    );
    // The sandbox line: bubblewrap works (ok), or what to install (a warning, not a failure).
    const { probeSandbox } = await import("../internal/tools/sandbox/sandbox-probe.js");
    const sandboxOk = (await probeSandbox()).ok;
    expect(line(r.stdout, "sandbox")).toMatch(
      sandboxOk
        ? /^ok {4}sandbox: bubblewrap [\d.]+ at \S*bwrap works \(no network/
        : /^warn {2}sandbox: not available: .*bubblewrap/,
    );
    expect(r.stdout.trim().split("\n").at(-1)).toBe(
      sandboxOk ? "all checks passed (1 warning)" : "all checks passed (2 warnings)",
    );
    // The fake answers 401 to any other key, so "key accepted" proves the configured key was sent.
  });

  it("separates refused credentials from an unreachable server, and checks channel tokens", async () => {
    fake = await startFakeOpenAI({ apiKey: "sk-good" });
    const closed = await freePort();
    const { dir } = await setup(
      [
        "models:",
        "  providers:",
        `    wrongkey: {base_url: "${fake.baseUrl}", api_key: sk-wrong}`,
        `    down: {base_url: "http://127.0.0.1:${closed}/v1", api_key: sk-x}`,
        '    badport: {base_url: "http://127.0.0.1:9/v1"}',
        "  primary: wrongkey/gpt-4o-mini",
        "channels:",
        "  telegram: {enabled: true}",
        "",
      ].join("\n"),
    );
    rmSync(join(dir, "workspace"), { recursive: true });
    const r = await cli(["doctor"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(line(r.stdout, "provider wrongkey")).toMatch(
      /^fail {2}provider wrongkey: credentials refused by http:\/\/127\.0\.0\.1:\d+\/v1\/models \(HTTP 401: Incorrect API key provided.*\): check models\.providers\.wrongkey\.api_key$/,
    );
    expect(line(r.stdout, "provider down")).toBe(
      `fail  provider down: unreachable: http://127.0.0.1:${closed}/v1/models: connection refused by 127.0.0.1:${closed}: is the server running? Check models.providers.down.base_url`,
    );
    expect(line(r.stdout, "provider badport")).toBe(
      'fail  provider badport: unreachable: http://127.0.0.1:9/v1/models: port 9 is one that fetch refuses to connect to (a "bad port"); serve the provider on another port and update models.providers.badport.base_url',
    );
    expect(line(r.stdout, "channel telegram")).toBe(
      "fail  channel telegram: enabled but channels.telegram.token is not set",
    );
    expect(line(r.stdout, "workspace")).toMatch(/^warn {2}workspace: .* does not exist/);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("4 checks failed");
  });

  it("reports a provider that does not answer within the timeout as unreachable", async () => {
    // A server that accepts connections and never answers.
    const sockets: import("node:net").Socket[] = [];
    const silent: Server = createServer((s) => sockets.push(s));
    await new Promise<void>((res) => silent.listen(0, "127.0.0.1", res));
    cleanups.push(
      () =>
        new Promise<void>((res) => {
          for (const s of sockets) s.destroy();
          silent.close(() => res());
        }),
    );
    const port = (silent.address() as { port: number }).port;
    const { dir } = await setup(
      `models:\n  providers:\n    slow: {base_url: "http://127.0.0.1:${port}/v1"}\n  primary: slow/m\n`,
    );
    const r = await cli(["doctor"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(line(r.stdout, "provider slow")).toBe(
      `fail  provider slow: unreachable: no answer from http://127.0.0.1:${port}/v1/models within 5 s: check models.providers.slow.base_url and the network`,
    );
  });

  it("warns when the sandbox is turned off and says what every command does then", async () => {
    const { dir } = await setup("tools:\n  exec:\n    sandbox:\n      enabled: false\n");
    const r = await cli(["doctor"], { cwd: dir });
    expect(line(r.stdout, "sandbox")).toMatch(
      /^warn {2}sandbox: off \(tools\.exec\.sandbox\.enabled: false\): every command outside tools\.exec\.allowlist asks the owner first/,
    );
  });

  it("fails on an invalid config with the problems on its line", async () => {
    const { dir } = await setup("log:\n  level: loud\n");
    const r = await cli(["doctor"], { cwd: dir });
    expect(r.code).toBe(1);
    expect(line(r.stdout, "config")).toMatch(
      /^fail {2}config: \.\/config\.yaml: log\.level: expected one of/,
    );
  });
});
