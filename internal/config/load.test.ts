import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, formatProblem } from "./errors.js";
import { configFromObject, loadConfigFile, parseConfigText } from "./load.js";

/** Parses and returns the formatted problems (`path: message`), or [] when valid. */
function problems(yaml: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfigText(yaml, "/cfg/config.yaml", env);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map(formatProblem);
  }
}

describe("env substitution", () => {
  it("substitutes a set variable inside a string", () => {
    const { config } = parseConfigText(
      "models:\n  providers:\n    openai:\n      base_url: https://${HOST}/v1\n      api_key: ${KEY}\n",
      "/cfg/config.yaml",
      { HOST: "api.example.com", KEY: "sk-abc123" },
    );
    expect(config.models.providers.openai?.base_url).toBe("https://api.example.com/v1");
    expect(config.models.providers.openai?.api_key).toBe("sk-abc123");
  });

  it("uses the default when the variable is unset or empty", () => {
    const text = "gateway:\n  bind: ${BIND:-127.0.0.2}\n  token: ${TOKEN:-}\n";
    expect(parseConfigText(text, "/cfg/c.yaml", {}).config.gateway.bind).toBe("127.0.0.2");
    expect(parseConfigText(text, "/cfg/c.yaml", { BIND: "" }).config.gateway.bind).toBe("127.0.0.2");
    expect(parseConfigText(text, "/cfg/c.yaml", { BIND: "127.0.0.9" }).config.gateway.bind).toBe("127.0.0.9");
    expect(parseConfigText(text, "/cfg/c.yaml", {}).config.gateway.token).toBe("");
  });

  it("names a missing required variable and the key that uses it", () => {
    const out = problems("channels:\n  telegram:\n    token: ${TELEGRAM_BOT_TOKEN}\n");
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^channels\.telegram\.token: environment variable TELEGRAM_BOT_TOKEN is not set/);
  });

  it("reports every missing variable, including inside lists", () => {
    const out = problems('data_dir: ${A}\nmodels:\n  fallbacks: ["${B}/x"]\n');
    expect(out).toEqual([
      expect.stringMatching(/^data_dir: environment variable A is not set/),
      expect.stringMatching(/^models\.fallbacks\[0\]: environment variable B is not set/),
    ]);
  });

  it("gives a whole-value reference the number or boolean type the schema wants", () => {
    const text = "gateway:\n  port: ${PORT:-18791}\n  enabled: ${GW:-true}\n  token: ${TOK}\n";
    const { config } = parseConfigText(text, "/cfg/c.yaml", { TOK: "123456789" });
    expect(config.gateway.port).toBe(18791);
    expect(config.gateway.enabled).toBe(true);
    // A string key stays a string even when the value looks like a number.
    expect(config.gateway.token).toBe("123456789");
    expect(problems("gateway:\n  port: ${PORT}\n", { PORT: "http" })).toEqual([
      'gateway.port: expected an integer 1-65535, got "http"',
    ]);
  });

  it("does not substitute inside comments", () => {
    expect(problems("# token: ${NOT_SET}\ngateway:\n  port: 18790\n")).toEqual([]);
  });
});

describe("validation errors name path, expectation and what was found", () => {
  it.each([
    ["wrong type (port)", "gateway:\n  port: abc", ['gateway.port: expected an integer 1-65535, got "abc"']],
    ["out of range", "gateway:\n  port: 70000", ["gateway.port: expected an integer 1-65535, got 70000"]],
    ["not an integer", "gateway:\n  port: 1.5", ["gateway.port: expected an integer 1-65535, got 1.5"]],
    [
      "boolean",
      "channels:\n  telegram:\n    enabled: yes",
      ['channels.telegram.enabled: expected true or false, got "yes"'],
    ],
    ["mapping expected", "log: 3", ["log: expected a mapping, got 3"]],
    [
      "no space after the colon",
      "gateway:\n  port:18790",
      ['gateway: expected a mapping, got "port:18790" (put a space after the colon: "key: value")'],
    ],
    [
      "telegram user id",
      'channels:\n  telegram:\n    allow_from: ["@me"]',
      ['channels.telegram.allow_from[0]: expected a numeric Telegram user id such as 123456789, got "@me"'],
    ],
    ["empty section", "gateway:", ["gateway: expected a mapping, got nothing (empty value)"]],
    [
      "list expected",
      "models:\n  fallbacks: openai/gpt-4o",
      ['models.fallbacks: expected a list, got "openai/gpt-4o"'],
    ],
    [
      "string expected in list",
      "tools:\n  exec:\n    allowlist: [ls, 2]",
      ["tools.exec.allowlist[1]: expected a string, got 2"],
    ],
    [
      "enum",
      "channels:\n  discord:\n    dm_policy: everyone",
      [
        'channels.discord.dm_policy: expected one of "pairing", "allowlist", "open", "disabled", got "everyone"',
      ],
    ],
    [
      "enum (log level)",
      "log:\n  level: loud",
      ['log.level: expected one of "fatal", "error", "warn", "info", "debug", "trace", "silent", got "loud"'],
    ],
    [
      "model reference",
      "models:\n  primary: gpt-4o",
      ['models.primary: expected a model reference <provider>/<model>, got "gpt-4o"'],
    ],
    [
      "missing required key",
      "models:\n  providers:\n    openai:\n      api_key: sk-x",
      [
        "models.providers.openai.base_url: expected a URL such as https://api.openai.com/v1, got nothing (key missing)",
      ],
    ],
    ["number bound", "models:\n  max_retries: 50", ["models.max_retries: expected a number <= 10, got 50"]],
    [
      "number lower bound",
      "channels:\n  discord:\n    stream:\n      edit_interval_ms: 10",
      ["channels.discord.stream.edit_interval_ms: expected a number >= 200, got 10"],
    ],
    [
      "duration",
      "heartbeat:\n  every: soon",
      ['heartbeat.every: expected a duration such as 30s, 5m, 1h30m or 0, got "soon"'],
    ],
    [
      "time zone",
      "timezone: Mars/Olympus",
      ['timezone: expected an IANA time zone such as Europe/Berlin, got "Mars/Olympus"'],
    ],
    [
      "url format",
      "mcp:\n  servers:\n    a:\n      url: nope",
      ['mcp.servers.a.url: expected a URL such as https://example.com, got "nope"'],
    ],
    [
      "union: no branch matched the type",
      "agents:\n  main:\n    tools: 5",
      ["agents.main.tools: expected a list or a mapping, got 5"],
    ],
    [
      "union: nested problem in the chosen branch",
      "agents:\n  main:\n    tools:\n      allow: 5",
      ["agents.main.tools.allow: expected a list, got 5"],
    ],
    [
      "refine over a mapping",
      "cron:\n  jobs:\n    - id: a\n      message: hi",
      ["cron.jobs[0]: expected exactly one of cron, every or at"],
    ],
    [
      "refine (mcp)",
      "mcp:\n  servers:\n    a: {}",
      ["mcp.servers.a: expected exactly one of command (stdio) or url (streamable HTTP)"],
    ],
    [
      "superRefine (duplicate id)",
      "cron:\n  jobs:\n    - {id: a, message: x, every: 1h}\n    - {id: a, message: y, every: 2h}",
      ['cron.jobs[1].id: duplicate job id, got "a"'],
    ],
  ])("%s", (_name, yaml, expected) => {
    expect(problems(yaml)).toEqual(expected);
  });

  it("never leaks zod's own wording", () => {
    const all = [
      "gateway: {port: x, bind: 5, token: [1]}",
      "agents: {main: {tools: {allow: 5, deny: 3}, max_iterations: 0, temperature: 9}}",
      "channels: {telegram: {allow_from: [abc], webhook: {url: x, secret: ''}}}",
      "models: {providers: {a: {base_url: 1, headers: [1]}}, pricing: {x: {input: -1}}}",
      "cron: {jobs: [{id: 'bad id', message: '', every: 1h}]}",
    ].flatMap((y) => problems(y));
    expect(all.length).toBeGreaterThan(10);
    for (const p of all) {
      expect(p).not.toMatch(/Invalid input|Too small|Too big|Invalid string|received/);
      expect(p).toMatch(/^[a-z_.[\]0-9]+: (expected|unknown key|duplicate)/);
    }
  });

  it("reports unknown keys with their full path and a suggestion for typos", () => {
    expect(problems("gateway:\n  prot: 1\nfoo: 1\n")).toEqual([
      'gateway.prot: unknown key (did you mean "port"?)',
      "foo: unknown key (not part of the config schema)",
    ]);
    expect(
      problems("models:\n  providers:\n    openai:\n      base_url: https://x/v1\n      apiKey: k"),
    ).toEqual(['models.providers.openai.apiKey: unknown key (did you mean "api_key"?)']);
    expect(problems("channels:\n  telegram:\n    dm_polcy: open")).toEqual([
      'channels.telegram.dm_polcy: unknown key (did you mean "dm_policy"?)',
    ]);
  });

  it("lists every problem, not just the first", () => {
    const out = problems("gateway:\n  port: abc\nlog:\n  level: loud\nchannels:\n  telegram:\n    tokn: x\n");
    expect(out).toHaveLength(3);
    expect(out.map((p) => p.split(":")[0])).toEqual(["gateway.port", "log.level", "channels.telegram.tokn"]);
  });

  it("reports YAML syntax errors with the line, without a code frame", () => {
    const [p, ...rest] = problems("gateway:\n  port: [1\n");
    expect(rest).toEqual([]);
    expect(p).toMatch(/^YAML syntax error: .* at line \d+, column \d+$/);
    expect(problems("gateway:\n  port: 1\ngateway:\n  port: 2\n")).toEqual([
      "YAML syntax error: Map keys must be unique at line 3, column 1",
    ]);
  });

  it("rejects a top level that is not a mapping", () => {
    expect(problems("- a\n- b\n")).toEqual([
      "expected a mapping of keys at the top level, got a list (2 items)",
    ]);
    expect(problems("just text")).toEqual(['expected a mapping of keys at the top level, got "just text"']);
  });

  it("formats the ConfigError message with the file and every problem", () => {
    try {
      parseConfigText("gateway:\n  port: abc\nfoo: 1\n", "/cfg/config.yaml", {});
      expect.unreachable();
    } catch (err) {
      expect((err as ConfigError).code).toBe("CONFIG_INVALID");
      expect((err as Error).message).toBe(
        '/cfg/config.yaml: 2 config error(s):\n  gateway.port: expected an integer 1-65535, got "abc"\n  foo: unknown key (not part of the config schema)',
      );
    }
  });
});

describe("defaults and paths", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("accepts an empty file and fills every default", () => {
    const { config } = parseConfigText("", "/cfg/config.yaml", {});
    expect(config.gateway).toMatchObject({ bind: "127.0.0.1", port: 18790, enabled: true });
    expect(config.log.level).toBe("info");
    expect(config.heartbeat.every).toBe(30 * 60_000);
    expect(config.models.fallbacks).toEqual([]);
    expect(config.channels.telegram.enabled).toBe(false);
  });

  it("resolves data_dir and workspace against the config file's directory", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-cfg-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "data_dir: ./state\nworkspace: /abs/ws\n");
    const loaded = loadConfigFile(file, {});
    expect(loaded.config.data_dir).toBe(join(dir, "state"));
    expect(loaded.config.workspace).toBe("/abs/ws");
    expect(loaded.baseDir).toBe(dir);
  });

  it("reports an unreadable file as one problem naming it", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-cfg-"));
    const file = join(dir, "missing.yaml");
    expect(() => loadConfigFile(file, {})).toThrow(
      /missing\.yaml: 1 config error\(s\):\n {2}cannot read config file/,
    );
  });

  it("validates in-memory objects with the same messages", () => {
    expect(() => configFromObject({ gateway: { port: "abc" } })).toThrow(
      'gateway.port: expected an integer 1-65535, got "abc"',
    );
  });
});
