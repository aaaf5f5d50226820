import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Writable } from "node:stream";
import { loadConfigFile } from "../config/load.js";
import { openDatabase, type Db } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { UsageTracker } from "../agent/usage/usage-tracker.js";
import { parseSince, usageCommand, type UsageReport } from "./usage.js";

const run = promisify(execFile);
let dir: string;
let cfgFile: string;
let writer: Db | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "familiar-usage-cli-"));
  cfgFile = join(dir, "config.yaml");
  writeFileSync(
    cfgFile,
    [
      "data_dir: ./data",
      "timezone: UTC",
      "models:",
      "  pricing:",
      '    "openai/gpt-4o": { input: 2.5, output: 10 }',
      "",
    ].join("\n"),
  );
});
afterEach(() => {
  writer?.close();
  writer = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function capture(): { stream: Writable; text: () => string } {
  let buf = "";
  return {
    stream: new Writable({
      write(c: Buffer, _e, cb) {
        buf += c.toString();
        cb();
      },
    }),
    text: () => buf,
  };
}

describe("familiar usage", () => {
  it("parses --since as a duration or an ISO date, and rejects junk clearly", () => {
    const now = Date.UTC(2026, 1, 10);
    expect(parseSince("7d", now)).toBe(now - 7 * 86_400_000);
    expect(parseSince("12h", now)).toBe(now - 12 * 3_600_000);
    expect(parseSince("2026-01-31", now)).toBe(Date.UTC(2026, 0, 31));
    expect(parseSince("2026-01-31T10:00:00Z", now)).toBe(Date.UTC(2026, 0, 31, 10));
    expect(() => parseSince("last tuesday", now)).toThrow(/--since expects/);
  });

  it("reports no usage when the database does not exist yet", async () => {
    const out = capture();
    await usageCommand({ config: cfgFile }, out.stream);
    expect(out.text()).toContain("no model calls recorded");
  });

  it("prints usage recorded by a running writer, as JSON from a real CLI process", async () => {
    const { config } = loadConfigFile(cfgFile);
    writer = openDatabase(config.data_dir, { migrations: allMigrations });
    const tracker = new UsageTracker({ db: writer, config: () => config });
    tracker.record({
      sessionId: "s1",
      sessionKey: "agent:main:gateway:cli",
      agentId: "main",
      provider: "openai",
      model: "gpt-4o",
      requestId: "r1",
      usage: { input: 1200, output: 300, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 1500 },
    });
    tracker.record({
      provider: "local",
      model: "llama3.1",
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, reasoning: 0, total: 15 },
    });

    // The writer stays open (like the daemon) while the CLI reads.
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "cmd/familiar.ts", "usage", "--json", "--since", "1d", "--config", cfgFile],
      { cwd: process.cwd(), timeout: 60_000 },
    );
    const report = JSON.parse(stdout) as UsageReport;
    expect(report.total).toMatchObject({ calls: 2, input: 1210, output: 305, total: 1515, unpricedCalls: 1 });
    // The unpriced local call counts at budgets.default_price ($5 / $15 per 1M by default): an estimate.
    expect(report.total.cost).toBeCloseTo((1200 * 2.5 + 300 * 10 + 10 * 5 + 5 * 15) / 1e6, 12);
    expect(report.defaultPrice).toEqual({ input: 5, output: 15 });
    expect(report.byModel.map((m) => `${m.provider}/${m.model}`)).toEqual([
      "openai/gpt-4o",
      "local/llama3.1",
    ]);
    expect(report.byDay).toHaveLength(1);
    expect(report.sessions.find((s) => s.sessionId === "s1")?.sessionKey).toBe("agent:main:gateway:cli");

    const out = capture();
    await usageCommand({ config: cfgFile }, out.stream);
    expect(out.text()).toContain("openai/gpt-4o");
    expect(out.text()).toContain("1,515");
    expect(out.text()).toMatch(/≈\$0\.0061/);
    expect(out.text()).toContain(
      "≈: 1 call(s) to a model without a price in models.pricing, counted at budgets.default_price ($5 input / $15 output per 1M tokens)",
    );
  });

  it("shows spend against each budget limit and the prompt-cache hit rate", async () => {
    writeFileSync(
      cfgFile,
      [
        "data_dir: ./data",
        "timezone: UTC",
        "models:",
        "  pricing:",
        '    "openai/gpt-4o": { input: 2.5, output: 10 }',
        "budgets:",
        "  overall: { daily_usd: 1, monthly_tokens: 100000 }",
        "  agents: { main: { daily_usd: 0.5 } }",
        "  per_session: { daily_usd: 0.25 }",
        "",
      ].join("\n"),
    );
    const { config } = loadConfigFile(cfgFile);
    writer = openDatabase(config.data_dir, { migrations: allMigrations });
    new UsageTracker({ db: writer, config: () => config }).record({
      sessionKey: "agent:main:telegram:dm:1",
      agentId: "main",
      provider: "openai",
      model: "gpt-4o",
      usage: { input: 40_000, output: 0, cacheRead: 30_000, cacheWrite: 0, reasoning: 0, total: 40_000 },
      channel: "telegram",
      payerAgent: "main",
      payerSession: "agent:main:telegram:dm:1",
    });
    const out = capture();
    await usageCommand({ config: cfgFile, json: true }, out.stream);
    const report = JSON.parse(out.text()) as UsageReport;
    // 10,000 uncached at $2.5/M + 30,000 cached at the input price = $0.1.
    expect(report.budgets.map((b) => [b.id, Math.round(b.spent * 1000) / 1000, b.limit])).toEqual([
      ["overall:daily_usd", 0.1, 1],
      ["overall:monthly_tokens", 40_000, 100_000],
      ["agent:main:daily_usd", 0.1, 0.5],
      ["session:agent:main:telegram:dm:1:daily_usd", 0.1, 0.25],
    ]);
    expect(report.cacheHitRate).toBe(0.75);
    const text = capture();
    await usageCommand({ config: cfgFile }, text.stream);
    expect(text.text()).toMatch(/agent "main"\s+daily\s+\$0\.10\s+\$0\.50\s+20%/);
    expect(text.text()).toContain("prompt cache: 75.0% of input tokens were read from the provider's cache");
  });
});
