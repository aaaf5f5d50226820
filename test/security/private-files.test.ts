/**
 * Issue 44, "Only the owner answers": the owner's private files (USER.md, MEMORY.md, memory/) stay
 * out of a group turn on every path, not only out of its prompt. The real daemon (`familiar run`),
 * the fake Telegram Bot API, the fake model playing a model that tries to read them, and real
 * bubblewrap: in a group the owner did not opt in, `exec cat ../MEMORY.md` and friends see nothing
 * private, and `read_file` refuses, a planted desk symlink included. The controls: the owner's own
 * DM and a group the owner opted in (`private_context`) still read them.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type FakeToolCall } from "../fakes/openai-server.js";
import { startFakeTelegram, type FakeTelegramServer, type FakeUser } from "../fakes/telegram-server.js";
import { cleanupDaemons, type DaemonProcess } from "../helpers/daemon.js";
import { startTelegramDaemon } from "../helpers/telegram-daemon.js";
import { sharedDeskOf } from "../../internal/agent/private-context.js";

let llm: FakeOpenAI;
let tg: FakeTelegramServer;
let d: DaemonProcess;
const owner: FakeUser = { id: 111, first_name: "Ann" };
const GROUP = -100777;
const OPTED = -100888;
const MEMORY_SECRET = "bank PIN 4321";
const USER_SECRET = "lives at 12 Elm Street";
const NOTE_SECRET = "divorce lawyer on Tuesday";

beforeAll(async () => {
  llm = await startFakeOpenAI();
  tg = await startFakeTelegram();
  d = await startTelegramDaemon(llm, tg, {
    telegram: {
      allow_from: [owner.id],
      owner: [owner.id],
      groups: [GROUP, OPTED],
      private_context: [OPTED],
      require_mention: false,
      stream: { mode: "off" },
    },
    config: { agents: { default: "main", main: {}, helper: {} } },
  });
  writeFileSync(join(d.workspace, "MEMORY.md"), `# Memory\n\n- ${MEMORY_SECRET}\n`);
  writeFileSync(join(d.workspace, "USER.md"), `# User\n\nAnn ${USER_SECRET}.\n`);
  mkdirSync(join(d.workspace, "memory"), { recursive: true });
  writeFileSync(join(d.workspace, "memory", "2026-11-01.md"), `- ${NOTE_SECRET}\n`);
  mkdirSync(join(d.workspace, "desk"), { recursive: true });
  // Planted on the desk (where any command or a tainted turn can write): a link to the owner's memory.
  symlinkSync("../MEMORY.md", join(d.workspace, "desk", "planted.md"));
}, 90_000);

afterAll(async () => {
  await cleanupDaemons();
  await tg.close();
  await llm.close();
});

let seq = 0;

/**
 * Has the model make `calls` (one per step) in a turn started by the owner in `chat`, then answer;
 * returns each call's tool result as the model got it, in order.
 */
async function turn(chat: number, calls: FakeToolCall[]): Promise<string[]> {
  const done = `done-${++seq}`;
  llm.enqueue(...calls.map((c) => ({ toolCalls: [c] })), { text: done });
  if (chat === owner.id) tg.pushText(owner, `please look ${seq}`);
  else tg.pushGroupText(chat, owner, `please look ${seq}`);
  await tg.waitFor(() => tg.visible(chat).some((m) => m.text.includes(done)), 60_000, done);
  const last = llm.requests.at(-1)?.body?.messages ?? [];
  const results = last.filter((m) => m.role === "tool").map((m) => String(m.content));
  return results.slice(-calls.length);
}

const exec = (command: string): FakeToolCall => ({ name: "exec", arguments: { command } });
const readFile = (path: string): FakeToolCall => ({ name: "read_file", arguments: { path } });
const SECRETS = [MEMORY_SECRET, USER_SECRET, NOTE_SECRET];

describe("a group turn the owner did not opt in", () => {
  it("gets nothing private from exec: the sandbox masks USER.md, MEMORY.md and memory/", async () => {
    // By absolute path: the turn's commands run in its own desk, deeper down.
    const ws = d.workspace;
    const r = await turn(GROUP, [
      exec(`cat ${ws}/MEMORY.md; echo rc=$?`),
      exec(`cat ${ws}/USER.md; echo rc=$?`),
      exec(`ls -A ${ws}/memory; cat ${ws}/memory/*.md; echo rc=$?`),
      exec(`cat ${ws}/desk/planted.md; grep -r PIN ${ws} 2>/dev/null; echo end`),
    ]);
    expect(r).toHaveLength(4);
    for (const out of r) for (const s of SECRETS) expect(out).not.toContain(s);
    // The commands did run (in the sandbox), they just saw nothing: no note file names either.
    expect(r[2]).toMatch(/rc=/);
    expect(r[2]).not.toContain("2026-11-01.md");
    expect(r[3]).toContain("end");
  }, 90_000);

  it("is refused read_file of MEMORY.md, USER.md, memory/ and a desk link to them, naming why", async () => {
    const r = await turn(GROUP, [
      readFile("MEMORY.md"),
      readFile("USER.md"),
      readFile("memory/2026-11-01.md"),
      readFile("desk/planted.md"),
      { name: "list_dir", arguments: { path: ".", recursive: true } },
    ]);
    for (const out of r) for (const s of SECRETS) expect(out).not.toContain(s);
    for (const out of r.slice(0, 4)) expect(out).toMatch(/not the owner's alone.*private_context/s);
    // The listing shows the desk but none of the private names.
    expect(r[4]).toContain("desk/");
    expect(r[4]).not.toMatch(/MEMORY\.md|USER\.md|memory\//);
  }, 90_000);
});

describe("the desk of a group turn", () => {
  it("is its own: what the owner's conversations left on the desk is out of sight, its own files are not", async () => {
    const DESK_SECRET = "salary review: 93,000";
    const mine = await turn(owner.id, [
      exec(`echo '${DESK_SECRET}' > report.md; mkdir -p drafts; cp report.md drafts/`),
    ]);
    expect(mine[0]).not.toMatch(/refused|error/i);
    const key = `agent:main:telegram:group:${GROUP}`;
    const own = sharedDeskOf(key);
    const r = await turn(GROUP, [
      exec(
        "pwd; ls -A; cat report.md ../report.md ../../report.md ../../drafts/report.md 2>&1; ls -A ../.. ../; echo end",
      ),
      exec("grep -r salary ../.. 2>/dev/null; echo mine > g.txt; echo wrote"),
      readFile("desk/report.md"),
      readFile("desk/drafts/report.md"),
      { name: "list_dir", arguments: { path: "desk", recursive: true } },
    ]);
    for (const out of r) expect(out).not.toContain(DESK_SECRET);
    expect(r[0]).toContain(own);
    expect(r[0]).toContain("end");
    expect(r[1]).toContain("wrote");
    for (const out of r.slice(2, 4))
      expect(out).toMatch(/not the owner's alone.*This chat's own desk is desk\/shared\//s);
    expect(r[4]).not.toMatch(/report\.md|drafts/);
    // Its own file, written by its command, is its to read; the owner's DM still reads the report.
    const again = await turn(GROUP, [readFile(`${own}/g.txt`)]);
    expect(again[0]).toContain("mine");
    const back = await turn(owner.id, [readFile("desk/report.md")]);
    expect(back[0]).toContain(DESK_SECRET);
  }, 120_000);
});

/**
 * Has the model in `chat` delegate to agent `helper`, which tries `read_file MEMORY.md` and `exec cat
 * ../MEMORY.md`; returns every tool result the model got during the turn.
 */
async function delegated(chat: number): Promise<string[]> {
  const done = `done-${++seq}`;
  const from = llm.requests.length;
  llm.enqueue(
    { toolCalls: [{ name: "delegate", arguments: { agent: "helper", message: "read the memory" } }] },
    { toolCalls: [readFile("MEMORY.md")] },
    { toolCalls: [exec(`cat ${d.workspace}/MEMORY.md ${d.workspace}/USER.md`)] },
    { text: "helper finished" },
    { text: done },
  );
  if (chat === owner.id) tg.pushText(owner, `delegate ${seq}`);
  else tg.pushGroupText(chat, owner, `delegate ${seq}`);
  await tg.waitFor(() => tg.visible(chat).some((m) => m.text.includes(done)), 60_000, done);
  const tools = llm.requests
    .slice(from)
    .flatMap((r) => (r.body?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content)));
  return [...new Set(tools)];
}

describe("a subagent started from a group turn", () => {
  it("is held to the same view: its read_file and exec get nothing private", async () => {
    const r = await delegated(GROUP);
    expect(r.length).toBeGreaterThanOrEqual(3);
    for (const out of r) for (const s of SECRETS) expect(out).not.toContain(s);
    expect(r.some((out) => /not the owner's alone/.test(out))).toBe(true);
  }, 90_000);

  it("control: the same delegation from the owner's DM reads them", async () => {
    const r = await delegated(owner.id);
    expect(r.some((out) => out.includes(MEMORY_SECRET))).toBe(true);
    expect(r.some((out) => out.includes(USER_SECRET))).toBe(true);
  }, 90_000);
});

describe("the controls", () => {
  it("the owner's DM still reads them, by exec and read_file", async () => {
    const r = await turn(owner.id, [
      exec("cat ../MEMORY.md ../USER.md ../memory/*.md"),
      readFile("MEMORY.md"),
    ]);
    expect(r[0]).toContain(MEMORY_SECRET);
    expect(r[0]).toContain(USER_SECRET);
    expect(r[0]).toContain(NOTE_SECRET);
    expect(r[1]).toContain(MEMORY_SECRET);
  }, 90_000);

  it("a group the owner opted in (private_context) still reads them", async () => {
    const r = await turn(OPTED, [exec("cat ../MEMORY.md ../memory/*.md"), readFile("USER.md")]);
    expect(r[0]).toContain(MEMORY_SECRET);
    expect(r[0]).toContain(NOTE_SECRET);
    expect(r[1]).toContain(USER_SECRET);
  }, 90_000);
});
