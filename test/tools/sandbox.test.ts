/**
 * Issue 18: every exec command runs under a real bubblewrap sandbox. The attacks of the issue, run
 * through ordinary tool calls, must fail; ordinary work in the workspace must run without approval.
 * Needs `bwrap` (Debian: bubblewrap; .ci/run installs it); skipped with the probe's reason otherwise.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { configFromObject } from "../../internal/config/load.js";
import { runShell } from "../../internal/tools/run-process.js";
import { sandboxInvocation, sandboxSpec } from "../../internal/tools/sandbox/sandbox-command.js";
import { logSandboxMode } from "../../internal/tools/sandbox/sandbox-mode.js";
import { findExecutable, probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { createToolsHarness, type ToolsHarness } from "./harness.js";

const status = await probeSandbox();
const skip = status.ok ? "" : ` (SKIPPED: ${status.problem ?? "no sandbox"})`;
if (!status.ok) console.warn(`sandbox tests skipped: ${status.problem ?? ""}`);
const has = (p: string): boolean => findExecutable(p, "/usr/bin:/bin") !== undefined;

let h: ToolsHarness | undefined;
const cleanup: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of cleanup.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A folder outside the workspace that the private /tmp of the sandbox does not hide by accident
 * (/dev/shm where it exists), so "cannot reach it" is the sandbox's doing.
 */
function outsideDir(): string {
  const d = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "familiar-outside-"));
  cleanup.push(d);
  return d;
}

describe.skipIf(!status.ok)(`exec in the sandbox: the boundary is the kernel${skip}`, () => {
  let server: Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end("loopback secret");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("runs ordinary work without asking, and the output reaches the model", async () => {
    h = await createToolsHarness();
    const r = await h.call("exec", { command: "sh -c 'echo hi > made.txt && ls'" });
    expect(r).toMatchObject({ content: "exit code 0\nmade.txt\n", isError: false });
    expect(readFileSync(join(h.workspace, "desk", "made.txt"), "utf8")).toBe("hi\n");
    expect(h.channel.sent).toHaveLength(0);
    // `git init` creates .git/config and hooks: one question (desk-attacks.test.ts), then git works.
    const git = h.call("exec", {
      command:
        "git init -q repo && cd repo && echo x > a.txt && git add a.txt && git -c user.name=F -c user.email=f@example.com commit -qm first && git log --format=%s",
    });
    await h.channel.waitFor(1);
    h.parts.approvals.resolve(h.channel.sent[0]?.opts?.approvalId ?? "", "approved");
    expect((await git).content).toMatch(/^exit code 0\nfirst\n\n\[the owner kept \d+ files \(hidden\)\]/);
  });

  it.skipIf(!has("python3"))("runs python3", async () => {
    h = await createToolsHarness();
    const r = await h.call("exec", { command: "python3 -c 'import os; print(6*7, os.getcwd())'" });
    expect(r.content).toBe(`exit code 0\n42 ${join(h.workspace, "desk")}\n`);
  });

  it.skipIf(!has("cc") || !has("make"))(
    "runs a small build (make + cc) on the desk; the program it makes asks once",
    async () => {
      h = await createToolsHarness();
      mkdirSync(join(h.workspace, "desk"), { recursive: true });
      writeFileSync(
        join(h.workspace, "desk", "hello.c"),
        '#include <stdio.h>\nint main(void){puts("built");return 0;}\n',
      );
      writeFileSync(join(h.workspace, "desk", "Makefile"), "hello: hello.c\n\tcc -o hello hello.c\n");
      const r = h.call("exec", { command: "make -s && ./hello" });
      await h.channel.waitFor(1);
      expect(h.channel.sent[0]?.text).toMatch(/hello \([\d.]+ KB, executable\)/);
      h.parts.approvals.resolve(h.channel.sent[0]?.opts?.approvalId ?? "", "approved");
      expect((await r).content).toMatch(/^exit code 0\nbuilt\n/);
      // Kept: the next run finds it built, writes plain output, asks nothing.
      const again = await h.call("exec", { command: "make -s && ./hello > out.txt && cat out.txt" });
      expect(again).toMatchObject({ content: "exit code 0\nbuilt\n", isError: false });
      expect(h.channel.sent).toHaveLength(1);
    },
  );

  it("keeps the daemon's /proc/<pid>/environ and secrets out of sight", async () => {
    process.env.FAMILIAR_SANDBOX_TEST_KEY = "sk-daemon-secret";
    process.env.SANDBOX_TEST_PLAIN = "plain-value";
    try {
      h = await createToolsHarness();
      const pid = process.pid;
      for (const command of [
        `cat /proc/${pid}/environ`,
        `cat \\/proc/${pid}/environ`,
        "cat /proc/1/environ /proc/*/environ",
        "env",
      ]) {
        const r = await h.call("exec", { command });
        expect(r.content, command).not.toContain("sk-daemon-secret");
        expect(r.content, command).not.toContain("SANDBOX_TEST_PLAIN");
      }
      const env = await h.call("exec", { command: "env" });
      expect(env.content).toContain(`PWD=${h.workspace}`);
      expect(env.content).toContain("HOME=/tmp");
      // Its own PID namespace: only the sandbox's processes are visible.
      const ps = await h.call("exec", { command: "ls /proc | grep -c '^[0-9]'" });
      expect(Number(ps.content.split("\n")[1])).toBeLessThan(6);
    } finally {
      delete process.env.FAMILIAR_SANDBOX_TEST_KEY;
      delete process.env.SANDBOX_TEST_PLAIN;
    }
  });

  it("backslash paths cannot read the config, the data dir, the home or a file outside", async () => {
    h = await createToolsHarness();
    const top = dirname(h.workspace);
    writeFileSync(join(top, "config.yaml"), "api_key: sk-config-secret\n");
    const out = outsideDir();
    writeFileSync(join(out, "secret.txt"), "outside-secret");
    for (const command of [
      `cat \\${top}/config.yaml`,
      `grep api_key \\${top}/config.yaml`,
      "cat .\\./config.yaml",
      "cat ../config.yaml",
      `cat \\${out}/secret.txt`,
      `ls \\${h.core.ctx.config().data_dir}`,
      `ls -a ${homedir()}`,
      "cat /etc/shadow",
      `git init -q . && git log --output=\\${out}/written -1; echo tried`,
    ]) {
      const pending = h.channel.sent.length;
      const call = h.call("exec", { command });
      // `git init` is asked about (Invariant 4); the answer here is no.
      if (command.startsWith("git init")) {
        await h.channel.waitFor(pending + 1);
        h.parts.approvals.resolve(h.channel.sent[pending]?.opts?.approvalId ?? "", "denied");
      }
      const r = await call;
      expect(r.content, command).not.toMatch(/sk-config-secret|outside-secret|familiar\.db|root:/);
    }
    expect((await h.call("exec", { command: `ls -a ${homedir()}` })).isError).toBe(true);
    expect(existsSync(join(out, "written"))).toBe(false);
    expect(h.channel.sent).toHaveLength(1);
  });

  it("cannot reach a loopback server with the network off; can with network: true", async () => {
    const fetchCmd = `node -e "fetch('http://127.0.0.1:${port}/').then(r => r.text()).then(t => console.log('GOT', t), e => { console.log('NO', e.cause?.code); process.exit(3); })"`;
    h = await createToolsHarness();
    hits = 0;
    const off = await h.call("exec", { command: fetchCmd });
    expect(off.isError).toBe(true);
    expect(off.content).toContain("NO");
    expect(hits).toBe(0);
    await h.close();
    // The host's network directly (the egress proxy off: node's fetch ignores HTTP_PROXY; the proxy
    // itself is tested in test/containment/egress-proxy.test.ts).
    h = await createToolsHarness({
      tools: { exec: { sandbox: { network: true } } },
      containment: { egress: { proxy: false } },
    });
    const on = await h.call("exec", { command: fetchCmd });
    expect(on.content).toContain("GOT loopback secret");
    expect(hits).toBe(1);
  });

  it("the git fsmonitor chain cannot write outside the desk or rewrite the owner's .git/config", async () => {
    h = await createToolsHarness();
    const out = outsideDir();
    execFileSync("git", ["init", "-q", h.workspace]);
    // The owner's repository is outside the desk: write_file refuses it outright.
    const asked = await h.call("write_file", {
      path: ".git/config",
      content: '[core]\n\tfsmonitor = "touch x"\n',
    });
    expect(asked.content).toContain("is not on the desk");
    expect(readFileSync(join(h.workspace, ".git/config"), "utf8")).not.toContain("fsmonitor");
    // Planted anyway (by the owner, say): git status on the desk runs it inside the sandbox only.
    writeFileSync(
      join(h.workspace, ".git/config"),
      `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ${out}/PWNED; touch ../PWNED-inside"\n`,
    );
    await h.call("exec", { command: "git status" });
    expect(existsSync(join(out, "PWNED"))).toBe(false);
    expect(existsSync(join(h.workspace, "PWNED-inside"))).toBe(false);
    // The command can neither change the owner's repository nor swap it: the workspace is read-only.
    const plant = await h.call("exec", {
      command:
        "git -C .. config core.pager 'touch PAGER'; echo evil > ../.git/hooks/pre-commit; mv ../.git ../.git-old; echo done",
    });
    expect(plant.content).toMatch(/Read-only file system/i);
    expect(readFileSync(join(h.workspace, ".git/config"), "utf8")).not.toContain("PAGER");
    expect(existsSync(join(h.workspace, ".git/hooks/pre-commit"))).toBe(false);
    expect(existsSync(join(h.workspace, ".git-old"))).toBe(false);
    expect(h.channel.sent).toHaveLength(0);
  });

  it("limits output, file size and memory inside the sandbox", async () => {
    h = await createToolsHarness({
      tools: { exec: { max_output_chars: 300, sandbox: { max_file_mb: 1, memory_mb: 256 } } },
    });
    // SIGXFSZ (25) stops the writer at the limit.
    const big = await h.call("exec", { command: "head -c 3000000 /dev/zero > big.bin; echo rc=$?" });
    expect(big.content).toContain("rc=153");
    expect(readFileSync(join(h.workspace, "desk", "big.bin")).length).toBe(1024 * 1024);
    const mem = await h.call("exec", {
      command: "python3 -c 'x = bytearray(512 * 1024 * 1024); print(len(x))' || echo refused",
    });
    expect(mem.content).not.toContain("536870912");
    expect(mem.content).toContain("MemoryError");
    // The limit is on memory used, not address space reserved: Node's fetch (WebAssembly) still works.
    const node = await h.call("exec", {
      command: `node -e "fetch('http://127.0.0.1:2/').catch(e => console.log('fetch ran', e.cause.code))"`,
    });
    expect(node.content).toContain("fetch ran ECONNREFUSED");
    const seq = await h.call("exec", { command: "seq 1 100000" });
    expect(seq.content).toContain("characters of output omitted");
  });

  it("grants extra read-only and read-write paths from config", async () => {
    const ro = outsideDir();
    const rw = outsideDir();
    writeFileSync(join(ro, "ref.txt"), "reference");
    h = await createToolsHarness({ tools: { exec: { sandbox: { ro: [ro], rw: [rw] } } } });
    expect((await h.call("exec", { command: `cat ${ro}/ref.txt` })).content).toBe("exit code 0\nreference");
    expect((await h.call("exec", { command: `touch ${ro}/x` })).isError).toBe(true);
    expect((await h.call("exec", { command: `echo w > ${rw}/out.txt` })).isError).toBe(false);
    expect(readFileSync(join(rw, "out.txt"), "utf8")).toBe("w\n");
  });

  it("masks the data dir and the config file when the workspace holds them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "familiar-inside-"));
    cleanup.push(dir);
    mkdirSync(join(dir, "ws"));
    h = await createToolsHarness({ data_dir: join(dir, "ws", "data"), workspace: join(dir, "ws") });
    writeFileSync(join(h.workspace, "note.txt"), "visible");
    const r = await h.call("exec", { command: "ls ../data; cat ../note.txt" });
    expect(r.content).toBe("exit code 0\nvisible");
    // The config file the daemon was started with cannot be read (workspace: . puts it inside).
    writeFileSync(join(h.workspace, "config.yaml"), "api_key: sk-config-secret\n");
    const cfg = h.core.ctx.config();
    const spec = sandboxSpec(cfg, status, {
      workspace: h.workspace,
      network: false,
      hide: [join(h.workspace, "config.yaml")],
      cpuS: 10,
    });
    const cmd = "wc -c < ../config.yaml; cat ../config.yaml";
    const run = await runShell(cmd, {
      cwd: h.workspace,
      timeoutMs: 10_000,
      maxOutput: 1000,
      signal: new AbortController().signal,
      invocation: sandboxInvocation(status, spec, ["/bin/sh", "-c", cmd]),
    });
    expect(run.output).not.toContain("sk-config-secret");
    expect(run.output).toContain("cat: ../config.yaml: Permission denied");
  });
});

describe("the start-up log says which exec mode is live", () => {
  it("logs the sandbox when it works, and a warning when it is off", async () => {
    const lines: { level: number; msg: string; sandbox: string }[] = [];
    const logger = pino({}, { write: (s: string) => lines.push(JSON.parse(s) as (typeof lines)[number]) });
    const dir = mkdtempSync(join(tmpdir(), "familiar-mode-"));
    cleanup.push(dir);
    await logSandboxMode(configFromObject({}, dir), logger);
    await logSandboxMode(configFromObject({ tools: { exec: { sandbox: { enabled: false } } } }, dir), logger);
    expect(lines[0]?.msg).toBe(
      status.ok ? "exec commands run in the bubblewrap sandbox" : "exec commands run WITHOUT a sandbox",
    );
    expect(lines[1]).toMatchObject({ level: 40, msg: "exec commands run WITHOUT a sandbox" });
    expect(lines[1]?.sandbox).toContain("every command outside tools.exec.allowlist asks the owner first");
  });
});

describe("sandbox config", () => {
  it("names the key when a granted path is not absolute", () => {
    expect(() => configFromObject({ tools: { exec: { sandbox: { ro: ["docs"] } } } }, tmpdir())).toThrow(
      /tools\.exec\.sandbox\.ro\[0\]: expected an absolute path \(or one starting with ~\/\), got "docs"/,
    );
  });
});
