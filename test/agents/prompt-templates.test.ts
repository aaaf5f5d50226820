/**
 * Prompt templates: an agent's `prompt_file` with `{{variable}}` interpolation, used by the real agent
 * host for every turn (the fake OpenAI server shows the system prompt it received). A missing file
 * falls back to the built-in prompt with a warning; an unknown variable is an error at load naming the
 * file and the variable. Time comes from a FakeClock, so `{{date}}` is exact.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { TestCore } from "../helpers/core.js";
import { useFakeModelSuite } from "../helpers/fake-model-suite.js";
import { FakeClock } from "../../internal/core/clock.js";
import { createLogger } from "../../internal/log/logger.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createAgentHost, type AgentHostImpl } from "../../internal/agent/host.js";
import { FileAgentSource } from "../../internal/agent/catalog/file-agents.js";
import { configPromptProblems } from "../../internal/agent/catalog/agent-prompt.js";
import {
  loadTemplateFile,
  parseTemplate,
  PromptTemplateError,
  renderTemplate,
} from "../../internal/agent/catalog/prompt-template.js";

const suite = useFakeModelSuite();
let core: TestCore | undefined;

interface Setup {
  host: AgentHostImpl;
  core: TestCore;
  ws: string;
  logs: () => { level: string; msg: string; path?: string }[];
}

function setup(agents: Record<string, unknown>, files: Record<string, string> = {}): Setup {
  const clock = new FakeClock(Date.UTC(2026, 10, 23, 9, 15));
  core = suite.createCore(
    {
      models: {
        providers: { fake: { base_url: suite.fake.baseUrl, api_key: "sk" } },
        primary: "fake/m",
        max_retries: 0,
      },
      agents,
    },
    { clock },
  );
  const ws = core.ctx.config().workspace;
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(ws, name, ".."), { recursive: true });
    writeFileSync(join(ws, name), text);
  }
  const lines: string[] = [];
  const sink = new PassThrough();
  sink.on("data", (b: Buffer) => lines.push(...b.toString().split("\n").filter(Boolean)));
  const logger = createLogger({ destination: sink, level: "info" });
  const ctx = { ...core.ctx, logger };
  const router = createModelRouter({ config: () => ctx.config(), logger, clock });
  const fileAgents = new FileAgentSource(() => ctx.config(), logger);
  fileAgents.load();
  const host = createAgentHost({ ctx, model: router, agentSources: [fileAgents] });
  return {
    host,
    core,
    ws,
    logs: () => lines.map((l) => JSON.parse(l) as { level: string; msg: string; path?: string }),
  };
}

/** The system prompt the model received in the last request. */
function lastSystem(): string {
  const m = suite.fake.requests.at(-1)?.body?.messages?.[0];
  expect(m?.role).toBe("system");
  return String(m?.content);
}

async function turn(
  host: AgentHostImpl,
  agentId: string,
  text: string,
  key = `gateway:${agentId}`,
): Promise<string> {
  const r = await host.submit({ channel: "gateway", sessionKey: key, agentId, text }).result;
  expect(r.finishReason).toBe("stop");
  return r.text;
}

describe("prompt templates (parse, load, render)", () => {
  it("renders known variables and rejects unknown ones naming file and variable", () => {
    const t = parseTemplate("Hi {{ user_input }} from {{agent}} on {{date}}", "inline");
    expect(t.variables.sort()).toEqual(["agent", "date", "user_input"]);
    expect(renderTemplate(t, { user_input: "Ann", agent: "main", date: "2026-11-23" })).toBe(
      "Hi Ann from main on 2026-11-23",
    );
    expect(() => parseTemplate("{{agent}} {{moon}} {{sun}}", "/x/p.md")).toThrow(
      new PromptTemplateError(
        "/x/p.md: unknown template variable(s) {{moon}}, {{sun}} (known: user_input, history, date, time, agent, timezone, channel, workspace)",
      ),
    );
    const warnings: string[] = [];
    expect(loadTemplateFile("missing.md", "/nonexistent-dir", (w) => warnings.push(w))).toBeUndefined();
    expect(warnings).toEqual([
      "prompt file /nonexistent-dir/missing.md not found: using the built-in prompt",
    ]);
  });
});

describe("prompt files in the agent host", () => {
  it("a config agent's prompt file is rendered into the system prompt of each turn", async () => {
    const { host } = setup(
      { main: { prompt_file: "prompts/main.md", system_prompt: "NOT USED WHEN THE FILE EXISTS" } },
      {
        "prompts/main.md":
          "You are {{agent}} on {{channel}}; today is {{date}} {{time}} ({{timezone}}).\nThe user just said: {{user_input}}\nSo far:\n{{history}}",
      },
    );
    suite.fake.enqueue({ text: "first answer" });
    await turn(host, "main", "hello there");
    let sys = lastSystem();
    expect(sys).toContain("You are main on gateway; today is 2026-11-23 09:15 (UTC).");
    expect(sys).toContain("The user just said: hello there");
    expect(sys).not.toContain("NOT USED");
    expect(sys).not.toContain("{{");

    suite.fake.enqueue({ text: "second answer" });
    await turn(host, "main", "and again");
    sys = lastSystem();
    expect(sys).toContain("The user just said: and again");
    expect(sys).toContain("So far:\nUser: hello there\nAssistant: first answer");
    // The built-in rules stay; the template replaces only the agent's own prompt.
    expect(sys).toContain("You are a personal assistant running inside Familiar");
  });

  it("a file agent's prompt file is rendered too", async () => {
    const { host } = setup(
      {},
      {
        "agents/writer.yaml": "name: writer\nprompt_file: prompts/writer.md\n",
        "prompts/writer.md": "WRITER TEMPLATE for {{agent}} in {{workspace}}",
      },
    );
    suite.fake.enqueue({ text: "ok" });
    await turn(host, "writer", "draft something");
    expect(lastSystem()).toContain(`WRITER TEMPLATE for writer in ${core?.ctx.config().workspace}`);
  });

  it("a missing prompt file falls back to the built-in prompt with a warning", async () => {
    const {
      host,
      core: c,
      logs,
    } = setup({ main: { prompt_file: "prompts/gone.md", system_prompt: "FALLBACK PROMPT" } });
    suite.fake.enqueue({ text: "ok" });
    await turn(host, "main", "hi");
    const sys = lastSystem();
    expect(sys).toContain("You are a personal assistant running inside Familiar");
    expect(sys).toContain("FALLBACK PROMPT");
    const gone = join(c.ctx.config().workspace, "prompts/gone.md");
    const warns = logs().filter((l) => l.level === "warn" && l.msg.includes(gone));
    expect(warns).toHaveLength(1);
    expect(warns[0]?.msg).toBe(`prompt file ${gone} not found: using the built-in prompt`);
    // Warned once, not on every turn.
    suite.fake.enqueue({ text: "ok" });
    await turn(host, "main", "hi again");
    expect(logs().filter((l) => l.level === "warn" && l.msg.includes(gone))).toHaveLength(1);
    // And the load-time check reports it as a warning, not an error.
    expect(configPromptProblems(c.ctx.config())).toEqual({
      errors: [],
      warnings: [
        {
          path: "config.yaml",
          key: "agents.main.prompt_file",
          message: `agents.main.prompt_file: prompt file ${gone} not found: using the built-in prompt`,
        },
      ],
    });
  });

  it("an unknown variable is an error at load naming the file and the variable", () => {
    const { core: c } = setup(
      { main: { prompt_file: "prompts/bad.md" } },
      { "prompts/bad.md": "Hello {{agent}}, the weather is {{weather}}." },
    );
    const file = join(c.ctx.config().workspace, "prompts/bad.md");
    expect(configPromptProblems(c.ctx.config()).errors).toEqual([
      {
        path: "config.yaml",
        key: "agents.main.prompt_file",
        message: expect.stringContaining(
          `agents.main.prompt_file: ${file}: unknown template variable(s) {{weather}}`,
        ),
      },
    ]);
  });
});
