/**
 * Issue 34 item 6 end to end: workspace agent files and API agents meet the 16K/32K context-window
 * rules everywhere config.yaml agents do — `familiar config check` and `familiar doctor` (the real
 * CLI in a child process, API agents in a real SQLite file), the daemon at start, when an agent file
 * appears or changes, on a config reload, and `/api/agents` (refused below the minimum with
 * `context_window_too_small`). The run time uses the same window: a workspace agent whose own
 * `context_window` is too small is refused without a model call.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApiAgentStore } from "../internal/agent/catalog/api-agents.js";
import { agentSchema } from "../internal/config/schema.js";
import { allMigrations } from "../internal/daemon/migrations.js";
import { openDatabase } from "../internal/store/db.js";
import { startFakeOpenAI } from "./fakes/openai-server.js";
import { freePort, runCli } from "./helpers/daemon.js";
import { harnessConfig, startGatewayDaemon, waitFor } from "./gateway/harness.js";

function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, cwd);
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const WARN_MID =
  "p/mid has a context window of 20000 tokens (models.providers.p.models.mid.context_window), under 32000: it works, but compaction will run often";
const WARN_EDGE =
  "p/edge has a context window of 31999 tokens (models.providers.p.models.edge.context_window), under 32000: it works, but compaction will run often";
const ERR_TINY =
  "expected a model with a context window of at least 16000 tokens, got p/tiny with 8000 (models.providers.p.models.tiny.context_window); the daemon would refuse every turn on it";

/**
 * A config dir: config.yaml with a config agent `cfg` on p/edge (31,999), workspace agent files and a
 * real database holding API agents.
 */
async function project(files: Record<string, string>, api: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-cwa-"));
  dirs.push(dir);
  mkdirSync(join(dir, "workspace", "agents"), { recursive: true });
  for (const [name, text] of Object.entries(files))
    writeFileSync(join(dir, "workspace", "agents", name), text);
  const yaml = [
    `data_dir: ${join(dir, "data")}`,
    `workspace: ${join(dir, "workspace")}`,
    `gateway:\n  port: ${await freePort()}`,
    "models:",
    "  providers:",
    '    p: {base_url: "http://127.0.0.1:1/v1", models: {big: {context_window: 128000}, mid: {context_window: 20000}, edge: {context_window: 31999}, tiny: {context_window: 8000}}}',
    "  primary: p/big",
    "agents:",
    "  cfg: {model: p/edge}",
    "",
  ].join("\n");
  writeFileSync(join(dir, "config.yaml"), yaml);
  const db = openDatabase(join(dir, "data"), { migrations: allMigrations });
  const store = new ApiAgentStore(db);
  for (const [id, model] of Object.entries(api)) store.create(id, agentSchema.parse({ model }));
  db.close();
  return dir;
}

describe("config check and doctor see workspace and API agents", () => {
  it("warns at 20,000 and 31,999 with the same message as for a config agent (exit 0, doctor warn)", async () => {
    const dir = await project(
      { "slim.yaml": "name: slim\nmodel: p/mid\n", "edge.yaml": "name: edge\nmodel: p/edge\n" },
      { apiedge: "p/edge" },
    );
    const check = await cli(["config", "check"], dir);
    expect(check.code, check.stderr).toBe(0);
    const warnings = check.stdout.split("\n").filter((l) => l.startsWith("warning: "));
    expect(warnings.sort()).toEqual(
      [
        `warning: agents.cfg.model: ${WARN_EDGE}`,
        `warning: agents/slim.yaml (workspace) model: ${WARN_MID}`,
        `warning: agents/edge.yaml (workspace) model: ${WARN_EDGE}`,
        `warning: API agent apiedge model: ${WARN_EDGE}`,
      ].sort(),
    );
    const doc = await cli(["doctor"], dir);
    const line = doc.stdout.split("\n").find((l) => l.slice(6).startsWith("context windows:"));
    expect(line?.startsWith("warn ")).toBe(true);
    expect(line).toContain(`agents.cfg.model: ${WARN_EDGE}`);
    expect(line).toContain(`agents/slim.yaml (workspace) model: ${WARN_MID}`);
    expect(line).toContain(`agents/edge.yaml (workspace) model: ${WARN_EDGE}`);
    expect(line).toContain(`API agent apiedge model: ${WARN_EDGE}`);
  });

  it("at 8,000 a workspace or API agent is an error, as a config agent is (exit 1, doctor fail)", async () => {
    const dir = await project({ "narrow.yaml": "name: narrow\nmodel: p/tiny\n" }, { apitiny: "p/tiny" });
    const check = await cli(["config", "check"], dir);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("config INVALID");
    expect(check.stderr).toContain(`  agents/narrow.yaml (workspace) model: ${ERR_TINY}`);
    expect(check.stderr).toContain(`  API agent apitiny model: ${ERR_TINY}`);
    const doc = await cli(["doctor"], dir);
    expect(doc.code).toBe(1);
    const line = doc.stdout.split("\n").find((l) => l.slice(6).startsWith("context windows:"));
    expect(line).toMatch(/^fail {2}context windows: /);
    expect(line).toContain(`agents/narrow.yaml (workspace) model: ${ERR_TINY}`);
    expect(line).toContain(`API agent apitiny model: ${ERR_TINY}`);
  });
});

describe("the daemon checks workspace and API agents at start, on change and on reload", () => {
  it("logs, refuses over the API, and refuses the turn the same way", async () => {
    const fake = await startFakeOpenAI();
    const windows = (wide: number): Record<string, unknown> => ({
      providers: {
        fake: {
          base_url: fake.baseUrl,
          api_key: "sk-fake",
          models: {
            mid: { context_window: 20_000 },
            edge: { context_window: 31_999 },
            tiny: { context_window: 8_000 },
            wide: { context_window: wide },
          },
        },
      },
      primary: "fake/test-model",
      max_retries: 0,
      timeout_s: 10,
    });
    const h = await startGatewayDaemon({ fake, config: { models: windows(64_000) } });
    const agents = join(h.dir, "workspace", "agents");
    const logged = (text: string, level: "warn" | "error"): string | undefined =>
      h.logs().find((l) => l.includes(text) && l.includes(`"level":"${level}"`));
    try {
      // A file that appears while the daemon runs (the catalog's watcher reloads it).
      mkdirSync(agents, { recursive: true });
      writeFileSync(join(agents, "slim.yaml"), "name: slim\nmodel: fake/mid\n");
      writeFileSync(join(agents, "narrow.yaml"), "name: narrow\nmodel: fake/tiny\n");
      writeFileSync(join(agents, "wide.yaml"), "name: wide\nmodel: fake/wide\n");
      await waitFor(() =>
        logged("agents/slim.yaml (workspace) model: fake/mid has a context window of 20000", "warn"),
      );
      await waitFor(() =>
        logged(
          "agents/narrow.yaml (workspace) model: expected a model with a context window of at least 16000 tokens, got fake/tiny with 8000",
          "error",
        ),
      );
      expect(h.logs().some((l) => l.includes("agents/wide.yaml"))).toBe(false);

      // A reload of config.yaml that shrinks the window of a workspace agent's model.
      const cfg = harnessConfig(h.dir, h.port, fake.baseUrl, { config: { models: windows(20_000) } });
      writeFileSync(h.configPath, JSON.stringify(cfg));
      expect(h.daemon.config.reload()).toMatchObject({ ok: true });
      await waitFor(() =>
        logged("agents/wide.yaml (workspace) model: fake/wide has a context window of 20000", "warn"),
      );

      // The API: below the minimum refused before anything is stored, with the agent, model, window and rule.
      const post = (body: unknown): Promise<Response> =>
        fetch(`${h.base}/api/agents`, { method: "POST", headers: h.headers(), body: JSON.stringify(body) });
      const refused = await post({ name: "apitiny", model: "fake/tiny" });
      expect(refused.status).toBe(422);
      expect(await refused.json()).toEqual({
        error: {
          code: "context_window_too_small",
          field: "model",
          message:
            "API agent apitiny model: expected a model with a context window of at least 16000 tokens, got fake/tiny with 8000 (models.providers.fake.models.tiny.context_window); the daemon would refuse every turn on it",
        },
      });
      expect((await fetch(`${h.base}/api/agents/apitiny`, { headers: h.headers() })).status).toBe(404);
      // Its own context_window making the default model too small: the field says so.
      const ownWindow = await post({ name: "apiown", context_window: 8000 });
      expect(ownWindow.status).toBe(422);
      expect(await ownWindow.json()).toEqual({
        error: {
          code: "context_window_too_small",
          field: "context_window",
          message:
            "API agent apiown: expected a model with a context window of at least 16000 tokens, got fake/test-model with 8000 (API agent apiown context_window); the daemon would refuse every turn on it",
        },
      });

      // At the warning threshold: stored, the warning returned and logged.
      const edgeWarning =
        "API agent apiedge model: fake/edge has a context window of 31999 tokens (models.providers.fake.models.edge.context_window), under 32000: it works, but compaction will run often";
      const created = await post({ name: "apiedge", model: "fake/edge" });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ id: "apiedge", warnings: [edgeWarning] });
      await waitFor(() => logged(edgeWarning, "warn"));

      // An update below the minimum is refused too, and the agent stays as it was.
      const patched = await fetch(`${h.base}/api/agents/apiedge`, {
        method: "PATCH",
        headers: h.headers(),
        body: JSON.stringify({ model: "fake/tiny" }),
      });
      expect(patched.status).toBe(422);
      expect(((await patched.json()) as { error: { code: string } }).error.code).toBe(
        "context_window_too_small",
      );
      const kept = await fetch(`${h.base}/api/agents/apiedge`, { headers: h.headers() });
      expect(await kept.json()).toMatchObject({ model: "fake/edge" });

      // A workspace agent's own context_window counts at run time as in the check: refused, no model call.
      writeFileSync(join(agents, "own.yaml"), "name: own\nmodel: fake/unstated\ncontext_window: 8000\n");
      await waitFor(() => logged("agents/own.yaml (workspace) model: expected a model", "error"));
      const before = fake.requests.length;
      const chat = await fetch(`${h.base}/api/agents/own/chat`, {
        method: "POST",
        headers: h.headers(),
        body: JSON.stringify({ message: "hello" }),
      });
      expect(chat.status).toBe(503);
      expect(JSON.stringify(await chat.json())).toContain("below the minimum of 16000");
      expect(fake.requests.length).toBe(before);
    } finally {
      await h.close();
      await fake.close();
    }
  });

  it("logs a workspace agent's small window at start", async () => {
    const fake = await startFakeOpenAI();
    const h0 = await startGatewayDaemon({
      fake,
      config: {
        models: {
          providers: {
            fake: { base_url: fake.baseUrl, api_key: "sk-fake", models: { mid: { context_window: 20_000 } } },
          },
          primary: "fake/test-model",
        },
      },
    });
    try {
      mkdirSync(join(h0.dir, "workspace", "agents"), { recursive: true });
      writeFileSync(join(h0.dir, "workspace", "agents", "slim.yaml"), "name: slim\nmodel: fake/mid\n");
      await waitFor(() => h0.logs().find((l) => l.includes("agents/slim.yaml (workspace) model")));
      const seen = h0.logs().length;
      await h0.restart();
      await waitFor(() =>
        h0
          .logs()
          .slice(seen)
          .find((l) =>
            l.includes("agents/slim.yaml (workspace) model: fake/mid has a context window of 20000"),
          ),
      );
    } finally {
      await h0.close();
      await fake.close();
    }
  });
});
