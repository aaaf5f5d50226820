/**
 * Issue 46 item 3: OpenAI's Codex CLI on `/v1/responses`. It always sends `reasoning`, `include:
 * ["reasoning.encrypted_content"]`, `client_metadata` and tools of type `namespace` and `web_search`;
 * the door accepts them, ignores them and names them in `X-Familiar-Ignored`. Each field over plain
 * HTTP, then the real Codex CLI from npm (installed by .ci/run into the cache, like Claude Code)
 * pointed at the daemon with `codex exec` and a custom model provider. A real daemon, the fake
 * OpenAI server as the model.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const CODEX = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "familiar/codex/node_modules/.bin/codex",
);
const HAVE_CODEX = existsSync(CODEX);

let h: GatewayHarness;
beforeAll(async () => {
  h = await startGatewayDaemon();
}, 60_000);
afterAll(async () => {
  await h?.close();
  await h?.fake.close();
});
beforeEach(() => h.fake.reset());

const post = (body: object): Promise<Response> =>
  fetch(`${h.base}/v1/responses`, {
    method: "POST",
    headers: h.headers(),
    body: JSON.stringify({ model: "familiar", input: "hi", store: false, ...body }),
  });

const fn = (name: string) => ({
  type: "function",
  name,
  description: `the ${name} tool`,
  strict: false,
  parameters: { type: "object", properties: {} },
});

describe("/v1/responses: the fields Codex sends", () => {
  const cases: [string, object, string][] = [
    ["reasoning: {}", { reasoning: {} }, "reasoning"],
    ["reasoning with a summary", { reasoning: { summary: "auto", effort: "medium" } }, "reasoning"],
    ["include", { include: ["reasoning.encrypted_content"] }, "include"],
    ["client_metadata", { client_metadata: { turn_id: "t-1" } }, "client_metadata"],
    [
      "a namespace tool",
      { tools: [fn("exec_command"), { type: "namespace", name: "agents", tools: [fn("spawn")] }] },
      "tools.namespace",
    ],
    ["a web_search tool", { tools: [fn("exec_command"), { type: "web_search" }] }, "tools.web_search"],
  ];
  for (const [what, body, named] of cases)
    it(`${what}: accepted, and named in X-Familiar-Ignored`, async () => {
      h.fake.enqueue({ text: "fine" });
      const r = await post(body);
      expect(r.status).toBe(200);
      expect(r.headers.get("x-familiar-ignored")).toBe(named);
      const j = (await r.json()) as { output_text: string };
      expect(j.output_text).toBe("fine");
    });

  it("the function tools beside an ignored one reach the model; the ignored ones do not", async () => {
    h.fake.enqueue({ text: "ok" });
    const r = await post({
      tools: [
        fn("exec_command"),
        { type: "namespace", name: "agents", tools: [fn("spawn")] },
        { type: "web_search" },
      ],
      reasoning: {},
      include: ["reasoning.encrypted_content"],
    });
    expect(r.headers.get("x-familiar-ignored")).toBe("reasoning,include,tools.namespace,tools.web_search");
    const tools = (h.fake.requests[0]?.body?.tools ?? []) as { function: { name: string } }[];
    const names = tools.map((t) => t.function.name);
    expect(names).toContain("exec_command");
    expect(names).not.toContain("spawn");
  });

  it("a request with none of them has no X-Familiar-Ignored; an empty include is not named", async () => {
    h.fake.enqueue({ text: "plain" }, { text: "plain" });
    expect((await post({})).headers.get("x-familiar-ignored")).toBeNull();
    expect((await post({ include: [] })).headers.get("x-familiar-ignored")).toBeNull();
  });

  it("an ignored field of the wrong shape is still a 400 naming it", async () => {
    for (const [body, param] of [
      [{ include: "reasoning.encrypted_content" }, "include"],
      [{ reasoning: "high" }, "reasoning"],
      [{ client_metadata: [1] }, "client_metadata"],
      [{ tools: [{ type: "file_search" }] }, "tools.0.type"],
    ] as const) {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });
});

describe("the real Codex CLI", () => {
  it.skipIf(!HAVE_CODEX)(
    `codex exec answers through the daemon, a function call and its output included${HAVE_CODEX ? "" : ` (SKIPPED: no Codex CLI at ${CODEX}; .ci/run installs @openai/codex there)`}`,
    async () => {
      const home = mkdtempSync(join(tmpdir(), "familiar-codex-home-"));
      const work = mkdtempSync(join(tmpdir(), "familiar-codex-work-"));
      try {
        // A function call first: Codex runs it and sends its output back (the whole input again,
        // store: false), then the answer.
        h.fake.enqueue(
          {
            toolCalls: [
              { id: "call_1", name: "exec_command", arguments: { cmd: "echo familiar-codex-ran-this" } },
            ],
          },
          { text: "Hello from Familiar, through Codex." },
        );
        const provider = `model_providers.familiar={name="familiar",base_url="${h.base}/v1",env_key="FAMILIAR_TOKEN",wire_api="responses"}`;
        const child = spawn(
          CODEX,
          [
            "exec",
            "--skip-git-repo-check",
            // Codex's own command sandbox needs its helper binary on PATH, which an npm install does
            // not put there; the command is a harmless echo in a temp folder.
            "--sandbox",
            "danger-full-access",
            "-c",
            "model_provider=familiar",
            "-c",
            provider,
            "-m",
            "familiar",
            "say hi",
          ],
          {
            cwd: work,
            env: { PATH: process.env.PATH ?? "", HOME: home, CODEX_HOME: home, FAMILIAR_TOKEN: h.token },
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
        let out = "";
        child.stdout.on("data", (b: Buffer) => (out += b.toString()));
        child.stderr.on("data", (b: Buffer) => (out += b.toString()));
        const code = await new Promise<number | null>((r) => child.on("close", r));
        expect(out).not.toMatch(/ERROR|unexpected status 4\d\d/);
        expect(code).toBe(0);
        expect(out).toContain("Hello from Familiar, through Codex.");
        // The model got Codex's message, and Codex's function tools (not its namespace or search).
        const req = h.fake.requests[0]?.body;
        expect(JSON.stringify(req?.messages)).toContain("say hi");
        const names = ((req?.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
        expect(names).toContain("exec_command");
        // The command's output came back as the call's result (the command ran, not just its text).
        const results = (
          (h.fake.requests[1]?.body?.messages ?? []) as {
            role: string;
            tool_call_id?: string;
            content?: unknown;
          }[]
        )
          .filter((m) => m.role === "tool" && m.tool_call_id === "call_1")
          .map((m) => JSON.stringify(m.content));
        expect(results).toHaveLength(1);
        expect(results[0]).toMatch(/familiar-codex-ran-this(\\n|")/);
      } finally {
        rmSync(home, { recursive: true, force: true });
        rmSync(work, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
