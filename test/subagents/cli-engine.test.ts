/**
 * The `cli` engine (a fresh subprocess per call) through the real agent host, with a small Node
 * script as the CLI (test/fixtures/cli-agent.mjs).
 */
import { dirname, join } from "node:path";
import { delimiter } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../internal/core/clock.js";
import type { AgentEvent } from "../../internal/core/agent-events.js";
import { resolveCommand } from "../../internal/agent/engines/cli-engine.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import {
  createSubagentHarness,
  forModel,
  modelsConfig,
  toolResults,
  waitFor,
  type SubagentHarness,
} from "./harness.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "cli-agent.mjs");
const FIXTURE_DIR = dirname(FIXTURE);
const ORIGINAL_PATH = process.env.PATH ?? "";
// The agents here run outside the sandbox (`sandbox: false`): the tests follow the CLI's pids, which
// a PID namespace hides. The sandboxed launch is test/subagents/cli-engine-sandbox.test.ts.

let fake: FakeOpenAI;
let h: SubagentHarness | undefined;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
afterEach(async () => {
  process.env.PATH = ORIGINAL_PATH;
  await h?.close();
  h = undefined;
  fake.reset();
});

function setup(extra: Record<string, unknown> = {}, clock?: FakeClock): Promise<SubagentHarness> {
  return createSubagentHarness(
    {
      models: modelsConfig(fake.baseUrl),
      agents: {
        main: {},
        shell: {
          engine: "cli",
          sandbox: false,
          command: FIXTURE,
          args: ["--flag", "two words"],
          timeout_s: 5,
        },
      },
      ...extra,
    },
    clock ? { clock } : {},
  );
}

const ask = (hh: SubagentHarness, agentId: string, text: string, onEvent?: (e: AgentEvent) => void) =>
  hh.submit(text, onEvent, { agentId, sessionKey: `agent:${agentId}:test:dm:owner` });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Submits "sleep" and resolves with the CLI's and its grandchild's pids once it is running. */
async function startSleeper(hh: SubagentHarness) {
  let ready = "";
  const handle = ask(hh, "shell", "sleep", (e) => {
    if (e.type === "text_delta") ready += e.delta;
  });
  const m = await waitFor(() => /ready pid=(\d+) child=(\d+)/.exec(ready), "the CLI to start");
  const pids = [Number(m[1]), Number(m[2])];
  expect(pids.every(alive)).toBe(true);
  return { handle, pids };
}

describe("cli engine", () => {
  it("runs `command [args...] <message>` with the command resolved on PATH when the engine is built", async () => {
    h = await createSubagentHarness({
      models: modelsConfig(fake.baseUrl),
      agents: {
        main: {},
        shell: { engine: "cli", sandbox: false, command: "cli-agent.mjs", args: ["--flag", "two words"] },
        late: { engine: "cli", sandbox: false, command: "cli-agent.mjs" },
      },
    });
    process.env.PATH = `${FIXTURE_DIR}${delimiter}${ORIGINAL_PATH}`;
    const first = await ask(h, "shell", "argv").result;
    expect(first.finishReason).toBe("stop");
    expect(JSON.parse(first.text)).toEqual(["--flag", "two words", "argv"]);
    // A minimal PATH later (as under systemd) does not matter: the path was resolved at build time.
    process.env.PATH = ORIGINAL_PATH;
    const second = await ask(h, "shell", "hello there").result;
    expect(second.text).toBe("you said: hello there");
    // An engine built while the command is not on PATH reports that clearly.
    const late = await ask(h, "late", "hello").result;
    expect(late.finishReason).toBe("error");
    expect(late.text).toContain('command "cli-agent.mjs" was not found on PATH');
    expect(resolveCommand("cli-agent.mjs", FIXTURE_DIR)).toBe(FIXTURE);
    expect(() => resolveCommand("cli-agent.mjs", "/nonexistent")).toThrow(/not found on PATH/);
  });

  it("streams stdout as text deltas and serves as a subagent for delegate", async () => {
    h = await setup();
    fake.enqueue(
      {
        model: "main-model",
        toolCalls: [{ name: "delegate", arguments: { agent: "shell", message: "list the files" } }],
      },
      { model: "main-model", text: "the shell agent answered" },
    );
    const r = await h.submit("ask the shell agent").result;
    expect(r.text).toBe("the shell agent answered");
    expect(toolResults(forModel(fake.requests, "main-model")[1])).toEqual([
      "[shell] you said: list the files",
    ]);
    const deltas: string[] = [];
    const direct = await ask(h, "shell", "streamed", (e) => {
      if (e.type === "text_delta") deltas.push(e.delta);
    }).result;
    expect(deltas.join("")).toBe(direct.text);
  });

  it("a non-zero exit is an error reply naming the exit code and stderr", async () => {
    h = await setup();
    const r = await ask(h, "shell", "fail").result;
    expect(r.finishReason).toBe("error");
    expect(r.error?.code).toBe("CLI_FAILED");
    expect(r.text).toBe(`${FIXTURE} exited with code 2: something broke\nfatal: bad input`);
  });

  it("caps the output at tools.exec.max_output_chars and says so", async () => {
    h = await setup({ tools: { exec: { max_output_chars: 1000 } } });
    const r = await ask(h, "shell", "big 50000").result;
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe(`${"y".repeat(1000)}\n[output truncated at 1000 characters]`);
  });

  it("an abort kills the whole process group", async () => {
    h = await setup();
    const { handle, pids } = await startSleeper(h);
    handle.abort("stop");
    const r = await handle.result;
    expect(r.finishReason).toBe("aborted");
    await waitFor(() => pids.every((p) => !alive(p)), "the CLI and its child to be killed");
  });

  it("a run past timeout_s is killed (process group) and reported (fake clock)", async () => {
    const clock = new FakeClock();
    h = await setup({}, clock);
    const { handle, pids } = await startSleeper(h);
    await clock.advance(5000);
    const r = await handle.result;
    expect(r.finishReason).toBe("error");
    expect(r.error).toEqual({ code: "CLI_TIMEOUT", message: `${FIXTURE} timed out after 5 s` });
    await waitFor(() => pids.every((p) => !alive(p)), "the CLI and its child to be killed");
  });
});
