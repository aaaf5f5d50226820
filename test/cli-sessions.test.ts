/**
 * `familiar sessions list|lineage|compact`, run as the user runs them (the real CLI in a child
 * process) against an in-process daemon whose model is the fake OpenAI server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGatewayDaemon, type GatewayHarness } from "./gateway/harness.js";
import { runCli } from "./helpers/daemon.js";

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], cwd: string): Promise<CliResult> {
  return runCli(args, cwd);
}

let h: GatewayHarness;
const KEY = "agent:main:gateway:notes";

beforeAll(async () => {
  h = await startGatewayDaemon({ config: { agents: { defaults: { compact: { keep_last_n: 2 } } } } });
  for (const text of [
    "my locker code is 4471",
    "the meeting moved to Thursday",
    "remember the blue folder",
  ]) {
    const res = await fetch(`${h.base}/v1/chat/completions`, {
      method: "POST",
      headers: h.headers({ "x-familiar-session": "notes" }),
      body: JSON.stringify({ model: "familiar", messages: [{ role: "user", content: text }] }),
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await h?.close();
});

describe("familiar sessions", () => {
  it("lists the live session with its message count", async () => {
    const r = await cli(["sessions", "list", "--config", h.configPath, "--json"], h.dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as { sessionKey: string; messageCount: number }[];
    expect(rows.find((x) => x.sessionKey === KEY)?.messageCount).toBe(6);
  });

  it("shows a session's messages with local times and request ids", async () => {
    const r = await cli(["sessions", "show", KEY, "--config", h.configPath], h.dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(new RegExp(`^session ${KEY} \\(\\S+, agent main\\)$`));
    expect(lines[2]).toMatch(/^TIME\s+ROLE\s+REQUEST ID\s+STATUS\s+TEXT$/);
    const json = await cli(["sessions", "show", KEY, "--config", h.configPath, "--json"], h.dir);
    const shown = JSON.parse(json.stdout) as { messages: { role: string; requestId: string | null }[] };
    const asked = shown.messages.find((m) => m.role === "assistant")!;
    expect(asked.requestId).toMatch(/\S+/);
    expect(r.stdout).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+assistant\\s+${asked.requestId}\\s+ok\\s+`,
        "m",
      ),
    );
    expect(r.stdout).toContain("familiar trace <request id>");
    const none = await cli(["sessions", "show", "nope", "--config", h.configPath], h.dir);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no session with id or key "nope"');
  });

  it("compacts over the gateway, then walks the lineage from the key and from the archived id", async () => {
    h.fake.enqueue({ text: "Summary: locker code 4471; meeting Thursday; blue folder." });
    const c = await cli(
      ["sessions", "compact", KEY, "keep", "numbers", "--config", h.configPath, "--json"],
      h.dir,
    );
    expect(c.stderr).toBe("");
    expect(c.code).toBe(0);
    const out = JSON.parse(c.stdout) as { tokensBefore: number; tokensAfter: number; summary: string };
    expect(out.summary).toContain("4471");
    // The summariser was asked with the operator's instructions.
    const last = JSON.stringify(h.fake.requests.at(-1)?.body ?? {});
    expect(last).toContain("keep numbers");

    const l = await cli(["sessions", "lineage", KEY, "--config", h.configPath, "--json"], h.dir);
    expect(l.code).toBe(0);
    const live = JSON.parse(l.stdout) as {
      session: { id: string; archivedAt: number | null };
      backward: { id: string; successorId: string }[];
      forward: unknown[];
      summaries: { summary: string }[];
    };
    expect(live.session.archivedAt).toBeNull();
    expect(live.backward).toHaveLength(1);
    expect(live.backward[0]?.successorId).toBe(live.session.id);
    expect(live.forward).toHaveLength(0);
    expect(live.summaries[0]?.summary).toContain("4471");

    const archivedId = live.backward[0]!.id;
    const back = await cli(["sessions", "lineage", archivedId, "--config", h.configPath], h.dir);
    expect(back.code).toBe(0);
    expect(back.stdout).toContain(`* ${archivedId}`);
    expect(back.stdout).toContain(live.session.id);
    expect(back.stdout).toMatch(/summaries:\n.*4 messages/);

    const all = await cli(
      ["sessions", "list", "--all", "--prefix", KEY, "--config", h.configPath, "--json"],
      h.dir,
    );
    expect((JSON.parse(all.stdout) as unknown[]).length).toBe(2);
    // The human table: a header, the live session marked, the compacted one marked archived.
    const table = await cli(["sessions", "list", "--all", "--prefix", KEY, "--config", h.configPath], h.dir);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SESSION KEY\s+SESSION ID\s+AGENT\s+MESSAGES\s+UPDATED\s+STATE\s+TAINT$/);
    expect(lines.find((l) => l.includes(live.session.id))).toMatch(
      /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+live\s+-$/,
    );
    expect(lines.find((l) => l.includes(archivedId))).toMatch(/archived\s+-$/);
  });

  it("names a session that does not exist and exits 1", async () => {
    const r = await cli(["sessions", "lineage", "nope", "--config", h.configPath], h.dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no session with id or key "nope"');
  });
});
