import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { evaluateExec, matchesAllowlist } from "../../internal/tools/exec-policy.js";
import { createToolsHarness, FakeClock, waitFor, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** True while the process exists and is not a zombie (a reaped-later zombie is dead for our purpose). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("exec policy", () => {
  it("matches every segment and refuses substitutions and redirections", () => {
    const list = ["ls *", "echo *", "git status", "pwd"];
    expect(matchesAllowlist("ls -la", list)).toBe(true);
    expect(matchesAllowlist("ls", list)).toBe(true);
    expect(matchesAllowlist("echo hi && pwd", list)).toBe(true);
    expect(matchesAllowlist("echo hi; rm -rf /", list)).toBe(false);
    expect(matchesAllowlist("echo $(rm -rf /)", list)).toBe(false);
    expect(matchesAllowlist("echo `id`", list)).toBe(false);
    expect(matchesAllowlist("echo hi > /etc/passwd", list)).toBe(false);
    // Quotes, backslashes and `$` are the shell's to interpret, not this check's: always a miss.
    expect(matchesAllowlist("echo 'a; b > c'", list)).toBe(false);
    expect(matchesAllowlist("git status --short", list)).toBe(false);
    // Variable expansion could print the daemon's secrets; paths outside the workspace are for the owner.
    const wide = [...list, "cat *", "grep *"];
    for (const [cmd, ok] of [
      ["echo $OPENAI_API_KEY", false],
      ['echo "key: ${TELEGRAM_BOT_TOKEN}"', false],
      ["echo '$HOME is literal here'", false],
      ["echo costs $5", false],
      // The shell removes backslashes after this check looked at the words (issue 18).
      ["cat \\/etc/hostname", false],
      ["grep api_key \\/srv/familiar/config.yaml", false],
      ["cat .\\./config.yaml", false],
      ["cat \\/proc/1/environ", false],
      ["git log --output=\\/outside/file", false],
      ["cat ~root/x", false],
      ["cat notes/todo.md", true],
      ["cat ~/.ssh/id_rsa", false],
      ["cat /etc/passwd", false],
      ["cat ../../secret.txt", false],
      ["cat notes/../../x", false],
      ['cat "/etc/passwd"', false],
      ["grep -r --file=/etc/shadow x .", false],
      ["grep -rn TODO .", true],
      ["ls ..", false],
      ["ls -la ./sub", true],
      ["echo a/..b", true],
    ] as const)
      expect(matchesAllowlist(cmd, wide), cmd).toBe(ok);
    expect(evaluateExec("rm x", { security: "deny", ask: "off", allowlist: list }).action).toBe("deny");
    expect(evaluateExec("rm x", { security: "full", ask: "on-miss", allowlist: list }).action).toBe("allow");
    expect(evaluateExec("ls", { security: "allowlist", ask: "always", allowlist: list }).action).toBe("ask");
    expect(evaluateExec("rm x", { security: "allowlist", ask: "off", allowlist: list }).action).toBe("deny");
  });
});

/** The approval-flow tests run without the sandbox: inside it commands do not ask. */
const UNSANDBOXED = { sandbox: { enabled: false } };
/** The allow list these tests were written against (the default is smaller now). */
const WIDE_LIST = ["ls *", "cat *", "echo *", "pwd", "date", "git status", "git log *", "grep *"];

describe("exec tool", () => {
  it("runs an allow-listed command in the workspace", async () => {
    h = await createToolsHarness();
    const r = await h.call("exec", { command: "pwd" });
    expect(r.isError).toBeFalsy();
    expect(r.content).toBe(`exit code 0\n${h.workspace}/desk\n`);
    expect(h.channel.sent).toHaveLength(0);
  });

  it("refuses everything when security is deny, and misses when ask is off", async () => {
    h = await createToolsHarness({ tools: { exec: { security: "deny" } } });
    expect((await h.call("exec", { command: "pwd" })).content).toContain("exec is disabled");
    await h.close();
    h = await createToolsHarness({ tools: { exec: { ask: "off", ...UNSANDBOXED } } });
    const r = await h.call("exec", { command: "touch made.txt" });
    expect(r.isError).toBe(true);
    expect(r.content).toContain("not in tools.exec.allowlist");
    expect(h.channel.sent).toHaveLength(0);
  });

  it("asks the owner on the originating channel and runs when approved", async () => {
    h = await createToolsHarness({ tools: { exec: UNSANDBOXED } });
    const p = h.call("exec", { command: "echo approved > out.txt" });
    await h.channel.waitFor(1);
    const sent = h.channel.sent[0];
    expect(sent?.target).toBe("owner");
    const id = sent?.opts?.approvalId ?? "";
    expect(sent?.text).toContain("$ echo approved > out.txt");
    expect(sent?.text).toContain(`/approve ${id}`);
    expect(sent?.text).toContain(`/deny ${id}`);
    expect(h.parts.approvals.list().map((a) => a.id)).toEqual([id]);
    expect(h.parts.approvals.resolve(id, "approved")).toBe(true);
    const r = await p;
    expect(r.content).toBe("exit code 0\n(no output)");
    expect(readFileSync(`${h.workspace}/desk/out.txt`, "utf8")).toBe("approved\n");
    expect(h.parts.approvals.resolve(id, "approved")).toBe(false);
  });

  it("does not run a denied command", async () => {
    h = await createToolsHarness({ tools: { exec: UNSANDBOXED } });
    const p = h.call("exec", { command: "touch denied.txt" });
    await h.channel.waitFor(1);
    h.parts.approvals.resolve(h.channel.sent[0]?.opts?.approvalId ?? "", "denied");
    const r = await p;
    expect(r).toEqual({ isError: true, content: "the owner denied this command" });
    expect(() => readFileSync(`${h?.workspace}/desk/denied.txt`)).toThrow();
  });

  it("expires an unanswered request on the clock", async () => {
    const clock = new FakeClock();
    h = await createToolsHarness({ tools: { exec: { approval_timeout_s: 30, ...UNSANDBOXED } } }, { clock });
    const p = h.call("exec", { command: "touch late.txt" });
    await h.channel.waitFor(1);
    expect(h.channel.sent[0]?.text).toContain("expires in 30s");
    await clock.advance(29_000);
    expect(h.parts.approvals.list()).toHaveLength(1);
    await clock.advance(1_000);
    const r = await p;
    expect(r.isError).toBe(true);
    expect(r.content).toContain("expired");
    expect(h.parts.approvals.list()).toHaveLength(0);
  });

  it("denies at once without a reply target or when delivery fails", async () => {
    h = await createToolsHarness({ tools: { exec: UNSANDBOXED } });
    const none = await h.call("exec", { command: "touch x" }, { ctx: { replyTarget: undefined } });
    expect(none.content).toContain("no channel to ask the owner on");
    const outcome = await h.parts.approvals.requestDetailed({
      sessionKey: "k",
      summary: "s",
      replyTarget: "gone:1",
    });
    expect(outcome.decision).toBe("denied");
    expect(outcome.reason).toContain("could not ask the owner on gone:1");
    h.channel.failWith = new Error("telegram down");
    expect(await h.call("exec", { command: "touch y" })).toEqual({
      isError: true,
      content: "the owner denied this command",
    });
    expect(h.parts.approvals.list()).toHaveLength(0);
  });

  it("kills the whole process group on timeout (no orphaned grandchild)", async () => {
    h = await createToolsHarness({ tools: { exec: { security: "full", ask: "off", ...UNSANDBOXED } } });
    const r = await h.call("exec", { command: "sleep 60 & echo $! > pid.txt; wait", timeout_s: 1 });
    expect(r.isError).toBe(true);
    expect(r.content).toContain("timed out after 1s");
    const pid = Number(readFileSync(`${h.workspace}/desk/pid.txt`, "utf8").trim());
    expect(pid).toBeGreaterThan(0);
    await waitFor(() => !alive(pid), 10_000, "the sleep grandchild to die");
  });

  it("kills the whole process group on abort", async () => {
    h = await createToolsHarness({ tools: { exec: { security: "full", ask: "off", ...UNSANDBOXED } } });
    const ac = new AbortController();
    const p = h.call("exec", { command: "sleep 60 & echo $! > pid.txt; wait" }, { signal: ac.signal });
    const pid = await waitFor(() => {
      try {
        return Number(readFileSync(`${h?.workspace}/desk/pid.txt`, "utf8").trim()) || 0;
      } catch {
        return 0;
      }
    });
    expect(alive(pid)).toBe(true);
    ac.abort();
    const r = await p;
    expect(r.isError).toBe(true);
    await waitFor(() => !alive(pid), 10_000, "the sleep grandchild to die");
  });

  it("keeps the daemon's secrets out of a command's environment", async () => {
    process.env.FAMILIAR_TEST_API_KEY = "sk-should-not-leak";
    process.env.FAMILIAR_TEST_PLAIN = "visible";
    process.env.SOME_BOT_TOKEN = "123:abc";
    process.env.EXEC_TEST_PLAIN = "plain-value";
    try {
      h = await createToolsHarness({ tools: { exec: { security: "full", ask: "off", ...UNSANDBOXED } } });
      const r = await h.call("exec", { command: "env" });
      expect(r.content).not.toContain("sk-should-not-leak");
      expect(r.content).not.toContain("123:abc");
      expect(r.content).not.toContain("FAMILIAR_TEST_PLAIN");
      expect(r.content).toContain("EXEC_TEST_PLAIN=plain-value");
      expect(r.content).toContain(`PWD=${h.workspace}/desk`);
    } finally {
      delete process.env.FAMILIAR_TEST_API_KEY;
      delete process.env.FAMILIAR_TEST_PLAIN;
      delete process.env.SOME_BOT_TOKEN;
      delete process.env.EXEC_TEST_PLAIN;
    }
  });

  it("asks the owner before an allow-listed command reads outside the workspace or expands a variable", async () => {
    const harness = (h = await createToolsHarness({
      tools: { exec: { allowlist: WIDE_LIST, ...UNSANDBOXED } },
    }));
    /** Runs `command`, expects the owner to be asked about exactly it, denies, and expects the refusal. */
    const askedAndDenied = async (command: string): Promise<void> => {
      const n = harness.channel.sent.length;
      const run = harness.call("exec", { command });
      await harness.channel.waitFor(n + 1);
      expect(harness.channel.sent[n]?.text).toContain(`$ ${command}`);
      harness.parts.approvals.resolve(harness.channel.sent[n]?.opts?.approvalId ?? "", "denied");
      expect((await run).content).toBe("the owner denied this command");
    };
    await askedAndDenied("cat /etc/hostname");
    await askedAndDenied("echo $HOME");
    // Backslashes the shell removes after the check (issue 18): never allow-listed.
    await askedAndDenied("cat \\/etc/hostname");
    await askedAndDenied("cat .\\./config.yaml");
    // A symlink out of the workspace is outside too.
    const outside = mkdtempSync(join(tmpdir(), "familiar-exec-outside-"));
    writeFileSync(join(outside, "secret.txt"), "s3cret");
    mkdirSync(join(h.workspace, "desk"), { recursive: true });
    symlinkSync(outside, join(h.workspace, "desk", "link"));
    try {
      await askedAndDenied("cat link/secret.txt");
      // ...also when a glob reaches it: through the symlinked folder, or matching the link itself.
      await askedAndDenied("cat link/*.txt");
      await askedAndDenied("ls -d l*");
      // Brace expansion (bash, also as sh) reaches it too, within a folder or across folders.
      await askedAndDenied("cat {link,none}/secret.txt");
      await askedAndDenied("cat {link/secret.txt,n.txt}");
      // A recursive grep that follows symlinks would read it: asked while such a link exists.
      await askedAndDenied("grep -Rn s3cret .");
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(join(h.workspace, "desk", "link"));
    }
    // Inside the workspace the allow list still runs at once, globs included.
    writeFileSync(join(h.workspace, "desk", "n.txt"), "inside");
    expect((await h.call("exec", { command: "cat n.txt" })).content).toBe("exit code 0\ninside");
    expect((await h.call("exec", { command: "cat *.txt" })).content).toBe("exit code 0\ninside");
    // With the escaping link gone, the recursive grep runs at once (grep -r never follows links).
    expect((await h.call("exec", { command: "grep -Rn inside ." })).content).toContain("n.txt:1:inside");
    expect((await h.call("exec", { command: "grep -rn inside ." })).content).toContain("n.txt:1:inside");
    expect(h.channel.sent).toHaveLength(10);
  });

  it("caps output keeping head and tail", async () => {
    h = await createToolsHarness({
      tools: { exec: { security: "full", ask: "off", max_output_chars: 200 } },
    });
    const r = await h.call("exec", { command: "seq 1 5000" });
    expect(r.content).toMatch(/^exit code 0\n1\n2\n/);
    expect(r.content).toContain("characters of output omitted");
    expect(r.content.trimEnd().endsWith("5000")).toBe(true);
  });
});
