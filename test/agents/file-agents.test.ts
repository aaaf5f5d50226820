/**
 * Agent files (`<workspace>/agents/*.yaml`) read by FileAgentSource from real files in a temp
 * workspace: every field, errors with path and key, clashes naming both places, prompt files, and the
 * live watcher (add, edit, break, fix, remove) observed by polling, never by fixed sleeps.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileAgentSource } from "../../internal/agent/catalog/file-agents.js";
import { findAgent, listAgents } from "../../internal/agent/agents.js";
import { createTestCore, type TestCore } from "../helpers/core.js";
import { waitFor } from "../gateway/harness.js";

const cores: TestCore[] = [];
const sources: FileAgentSource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
  for (const c of cores.splice(0)) c.close();
});

function setup(config: Record<string, unknown> = {}): { core: TestCore; src: FileAgentSource; dir: string } {
  const core = createTestCore(config);
  cores.push(core);
  const src = new FileAgentSource(() => core.ctx.config(), core.ctx.logger);
  sources.push(src);
  const dir = join(core.ctx.config().workspace, "agents");
  mkdirSync(dir, { recursive: true });
  return { core, src, dir };
}

const FULL = `name: analyst_2
model: fake/analyst-model
description: Terse numbers person
system_prompt: Lead with the number.
max_tokens: 777
temperature: 0.3
tools: {allow: [read_file, web_fetch], deny: [exec]}
engine: model
capabilities:
  - {name: analysis, tags: [numbers, tables], strength: 0.9}
compact: {strategy: manual, keep_last_n: 6, observation_mask: false}
max_iterations: 7
`;

describe("agent files", () => {
  it("load with every field and show up beside config agents with their source", () => {
    const { core, src, dir } = setup({ agents: { helper: { description: "from config" } } });
    writeFileSync(join(dir, "analyst.yaml"), FULL);
    src.load();
    expect(src.errors()).toEqual([]);
    const a = findAgent(core.ctx.config(), "analyst_2", [src]);
    expect(a).toMatchObject({
      id: "analyst_2",
      source: `file:${join(dir, "analyst.yaml")}`,
      model: "fake/analyst-model",
      description: "Terse numbers person",
      system_prompt: "Lead with the number.",
      max_tokens: 777,
      temperature: 0.3,
      tools: { allow: ["read_file", "web_fetch"], deny: ["exec"] },
      engine: "model",
      capabilities: [{ name: "analysis", tags: ["numbers", "tables"], strength: 0.9 }],
      compact: { strategy: "manual", keep_last_n: 6, observation_mask: false },
      max_iterations: 7,
    });
    expect(listAgents(core.ctx.config(), [src]).map((x) => [x.id, x.source.split(":")[0]])).toEqual([
      ["helper", "config"],
      ["main", "builtin"],
      ["analyst_2", "file"],
    ]);
  });

  it("report an invalid file with its path and key while the others keep working", () => {
    const { src, dir } = setup();
    writeFileSync(join(dir, "good.yaml"), "name: good\ndescription: fine\n");
    writeFileSync(join(dir, "bad.yaml"), "name: bad\ntemperature: 5\n");
    writeFileSync(join(dir, "typo.yaml"), "name: typo\nsystem_promt: hi\n");
    writeFileSync(join(dir, "url.yaml"), "name: not url safe\n");
    writeFileSync(join(dir, "broken.yml"), "name: [unclosed\n");
    writeFileSync(join(dir, "notes.txt"), "not an agent");
    src.load();
    expect(src.list().map((a) => a.id)).toEqual(["good"]);
    const errs = src.errors();
    expect(errs.find((e) => e.path === join(dir, "bad.yaml"))).toMatchObject({
      key: "temperature",
      message: expect.stringMatching(/^temperature: .*2.*5/),
    });
    expect(errs.find((e) => e.path === join(dir, "typo.yaml"))).toMatchObject({
      message: expect.stringMatching(/system_promt/),
    });
    expect(errs.find((e) => e.path === join(dir, "url.yaml"))).toMatchObject({
      key: "name",
      message: expect.stringMatching(/URL-safe/),
    });
    expect(errs.find((e) => e.path === join(dir, "broken.yml"))?.message).toMatch(/YAML syntax error/);
    expect(errs).toHaveLength(4);
  });

  it("cannot choose a CLI engine or set its program (a sandboxed command can write the folder)", () => {
    const { src, dir } = setup();
    writeFileSync(join(dir, "coder.yaml"), "name: coder\nengine: claude-cli\n");
    writeFileSync(join(dir, "shell.yaml"), "name: shell\nengine: cli\ncommand: /bin/sh\nargs: [-c]\n");
    writeFileSync(
      join(dir, "yolo.yaml"),
      "name: yolo\nengine: claude-cli\nextra_args: [--dangerously-skip-permissions]\n",
    );
    writeFileSync(join(dir, "mcp.yaml"), "name: mcp\nengine: claude-cli\nmcp_config: mcp.json\n");
    src.load();
    // Issue 31: `engine: claude-cli` with no command started the owner's claude unsandboxed.
    expect(src.list().map((a) => a.id)).toEqual([]);
    const keyOf = (f: string) => src.errors().find((e) => e.path === join(dir, f));
    expect(keyOf("coder.yaml")).toMatchObject({
      key: "engine",
      message: expect.stringMatching(/engine: a workspace agent file cannot set this.*config\.yaml/),
    });
    expect(keyOf("shell.yaml")).toMatchObject({
      key: "command",
      message: expect.stringMatching(/config\.yaml/),
    });
    expect(keyOf("yolo.yaml")).toMatchObject({ key: "extra_args" });
    expect(keyOf("mcp.yaml")).toMatchObject({ key: "mcp_config" });
  });

  it("cannot take its prompt from the desk, which commands can write (issue 43)", () => {
    const { src, dir } = setup();
    writeFileSync(join(dir, "desky.yaml"), "name: desky\nprompt_file: desk/notes/prompt.md\n");
    src.load();
    expect(src.list().map((a) => a.id)).toEqual([]);
    expect(src.errors().find((e) => e.path === join(dir, "desky.yaml"))).toMatchObject({
      key: "prompt_file",
      message: expect.stringMatching(/on the desk, which commands can write/),
    });
  });

  it("a name clash with config.yaml is an error naming both places; config wins", () => {
    const { core, src, dir } = setup({ agents: { helper: { description: "from config" } } });
    const file = join(dir, "helper.yaml");
    writeFileSync(file, "name: helper\ndescription: from a file\n");
    src.load();
    expect(src.errors()).toEqual([
      {
        path: file,
        key: "name",
        message: `name: agent "helper" is defined both in config.yaml (agents.helper) and in ${file}; config.yaml wins`,
      },
    ]);
    expect(findAgent(core.ctx.config(), "helper", [src])?.description).toBe("from config");

    // Two files with one name: the second names the first; reserved keys are refused.
    writeFileSync(join(dir, "a.yaml"), "name: twin\n");
    writeFileSync(join(dir, "b.yaml"), "name: twin\n");
    writeFileSync(join(dir, "c.yaml"), "name: defaults\n");
    src.load();
    const msgs = src.errors().map((e) => e.message);
    expect(msgs).toContain(`name: agent "twin" is also defined in ${join(dir, "a.yaml")}`);
    expect(msgs).toContain('name: "defaults" is reserved');

    // The clash ends when config.yaml drops the agent (a config reload re-reads the files).
    core.setConfig({ agents: {} });
    src.load();
    expect(findAgent(core.ctx.config(), "helper", [src])?.description).toBe("from a file");
  });

  it("a prompt file with an unknown variable keeps the agent out, naming file and variable", () => {
    const { core, src, dir } = setup();
    const ws = core.ctx.config().workspace;
    mkdirSync(join(ws, "prompts"));
    writeFileSync(join(ws, "prompts", "bad.md"), "Hi {{agent}}, today is {{date}}. {{weather}}");
    writeFileSync(join(ws, "prompts", "good.md"), "You are {{agent}}. Today: {{date}}.");
    writeFileSync(join(dir, "bad.yaml"), "name: bad\nprompt_file: prompts/bad.md\n");
    writeFileSync(join(dir, "good.yaml"), "name: good\nprompt_file: prompts/good.md\n");
    writeFileSync(join(dir, "lost.yaml"), "name: lost\nprompt_file: prompts/nowhere.md\n");
    src.load();
    expect(src.list().map((a) => a.id)).toEqual(["good", "lost"]);
    expect(src.errors()).toEqual([
      {
        path: join(dir, "bad.yaml"),
        key: "prompt_file",
        message: expect.stringContaining(
          `${join(ws, "prompts", "bad.md")}: unknown template variable(s) {{weather}}`,
        ),
      },
    ]);
    // A missing prompt file loads the agent (built-in prompt) and warns.
    expect(src.warnings()).toEqual([
      {
        path: join(dir, "lost.yaml"),
        key: "prompt_file",
        message: `prompt_file: prompt file ${join(ws, "prompts", "nowhere.md")} not found: using the built-in prompt`,
      },
    ]);
  });

  it("follow the folder live: add, edit, break, fix, remove", async () => {
    const { core, src, dir } = setup();
    rmSync(dir, { recursive: true });
    // The folder does not exist yet: watching creates it, so the first file is seen.
    await src.watch(20);
    const cfg = (): ReturnType<typeof core.ctx.config> => core.ctx.config();
    const file = join(dir, "scout.yaml");
    let changes = 0;
    src.onChange(() => changes++);

    writeFileSync(file, "name: scout\ndescription: first\n");
    await waitFor(() => findAgent(cfg(), "scout", [src])?.description === "first");

    writeFileSync(file, "name: scout\ndescription: second\ntemperature: 1.5\n");
    await waitFor(() => findAgent(cfg(), "scout", [src])?.description === "second");
    expect(findAgent(cfg(), "scout", [src])?.temperature).toBe(1.5);

    writeFileSync(join(dir, "other.yaml"), "name: other\n");
    writeFileSync(file, "name: scout\nmax_tokens: lots\n");
    await waitFor(() => src.errors().length === 1);
    expect(src.errors()[0]).toMatchObject({ path: file, key: "max_tokens" });
    expect(findAgent(cfg(), "scout", [src])).toBeUndefined();
    expect(findAgent(cfg(), "other", [src])).toBeDefined();

    writeFileSync(file, "name: scout\nmax_tokens: 100\n");
    await waitFor(() => findAgent(cfg(), "scout", [src])?.max_tokens === 100);
    expect(src.errors()).toEqual([]);

    rmSync(file);
    await waitFor(() => findAgent(cfg(), "scout", [src]) === undefined);
    expect(src.list().map((a) => a.id)).toEqual(["other"]);
    expect(changes).toBeGreaterThanOrEqual(5);
  });
});
