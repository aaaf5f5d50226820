/**
 * Issue 32: the sandbox's totals are bounded. Its RAM-backed places (`/tmp`, `/dev/shm`, `/var/tmp`,
 * the root it is built on, `/dev`) are sized or read-only; a command's processes together stay under
 * `total_memory_mb` where a cgroup is available; the workspace has a disk budget; nested user
 * namespaces are refused. Against the real bubblewrap; skipped with the probe's reason otherwise.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findCgroupBase, probeCgroup } from "../../internal/tools/sandbox/sandbox-cgroup.js";
import { probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { workspaceUsage } from "../../internal/tools/sandbox/workspace-usage.js";
import { createToolsHarness, waitFor, type ToolsHarness } from "./harness.js";

const status = await probeSandbox();
const skip = status.ok ? "" : ` (SKIPPED: ${status.problem ?? "no sandbox"})`;
const cgroup = probeCgroup();

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Writes two files of `mb` MB each into `dir` inside the sandbox and reports what stuck. */
const twoFiles = (dir: string, mb: number): string =>
  `for f in a b; do head -c ${mb}M /dev/zero > ${dir}/$f; echo "$f rc=$?"; done; du -sk ${dir} | cut -f1`;

describe.skipIf(!status.ok)(`the sandbox's RAM and disk are bounded${skip}`, () => {
  it("/tmp is sized: two files of 40 MB do not fit in a 64 MB /tmp; /var/tmp and /dev/shm likewise", async () => {
    h = await createToolsHarness({ tools: { exec: { sandbox: { tmp_mb: 64 } } } });
    if (!status.features?.size) return expect.fail("bwrap here has no --size; /tmp cannot be sized");
    for (const dir of ["/tmp", "/var/tmp", "/dev/shm"]) {
      const r = await h.call("exec", { command: twoFiles(dir, 40) });
      expect(r.content, dir).toContain("a rc=0");
      expect(r.content, dir).toMatch(/b rc=1/);
      expect(r.content, dir).toContain("No space left on device");
      expect(Number(r.content.trim().split("\n").at(-1)), dir).toBeLessThanOrEqual(64 * 1024 + 8);
    }
  });

  it("the sandbox's own root and /dev are read-only (no unsized RAM to fill there)", async () => {
    h = await createToolsHarness();
    for (const p of ["/x", "/var/x", "/dev/x", "/run/x"]) {
      const r = await h.call("exec", { command: `echo x > ${p}` });
      expect(r.isError, p).toBe(true);
      expect(r.content, p).toMatch(/Read-only file system|No such file or directory|Directory nonexistent/);
    }
    // /dev/null still takes writes.
    expect((await h.call("exec", { command: "echo x > /dev/null && echo ok" })).content).toBe(
      "exit code 0\nok\n",
    );
  });

  it.skipIf(!cgroup.ok)(
    `a command's processes together cannot hold more than total_memory_mb, /tmp included${cgroup.ok ? "" : ` (SKIPPED: ${cgroup.problem ?? ""})`}`,
    async () => {
      // /tmp alone would take both files; the cgroup (96 MB for everything) does not.
      h = await createToolsHarness({ tools: { exec: { sandbox: { tmp_mb: 512, total_memory_mb: 96 } } } });
      const r = await h.call("exec", { command: twoFiles("/tmp", 60) });
      expect(r.content).toContain("a rc=0");
      expect(r.content).not.toContain("b rc=0");
      expect(r.content).toContain("reached their memory limit of 96 MB (tools.exec.sandbox.total_memory_mb)");
      // Two processes each under the per-process limit, together over the total.
      const two = await h.call("exec", {
        command:
          "python3 -c 'import time; x = bytearray(60*1024*1024); time.sleep(2)' & python3 -c 'import time; x = bytearray(60*1024*1024); time.sleep(2); print(\"second held\")'; wait",
      });
      expect(two.content).toContain("reached their memory limit");
      // An ordinary command runs as before, and no command's cgroup is left behind.
      expect((await h.call("exec", { command: "echo fine" })).content).toBe("exit code 0\nfine\n");
      const mine = (): string[] =>
        readdirSync(cgroup.base ?? "").filter((n) => n.startsWith(`familiar-cmd-${process.pid}-`));
      await waitFor(() => mine().length === 0, 20_000, "the command cgroups to be removed");
    },
  );

  it("nested user namespaces are refused inside (bwrap --disable-userns)", async () => {
    h = await createToolsHarness();
    if (!status.features?.disableUserns) return expect.fail("this bwrap cannot disable user namespaces");
    const r = await h.call("exec", { command: "unshare -U true; echo rc=$?" });
    expect(r.content).toMatch(/rc=[1-9]/);
  });

  it("the workspace disk budget: over it, exec refuses with a clear error; a command crossing it is told", async () => {
    h = await createToolsHarness({ tools: { exec: { sandbox: { workspace_disk_mb: 8 } } } });
    const cross = await h.call("exec", { command: "head -c 12M /dev/urandom > big.bin; echo wrote" });
    expect(cross.isError).toBe(true);
    expect(cross.content).toContain("wrote");
    expect(cross.content).toMatch(
      /the workspace uses 1[2-3] MB, over its budget of 8 MB \(tools\.exec\.sandbox\.workspace_disk_mb\): delete files now/,
    );
    await expect(h.call("exec", { command: "echo hi" })).resolves.toMatchObject({
      isError: true,
      content: expect.stringMatching(/refused: the workspace uses 1[2-3] MB, over its budget of 8 MB/),
    });
    writeFileSync(join(h.workspace, "desk", "ok.txt"), "x");
    rmSync(join(h.workspace, "desk", "big.bin"));
    expect((await h.call("exec", { command: "cat ok.txt" })).content).toBe("exit code 0\nx");
  });
});

describe("finding a cgroup to count a command's memory in", () => {
  it("says why not when there is no memory controller", () => {
    const root = mkdtempSync(join(tmpdir(), "familiar-cg-"));
    try {
      writeFileSync(join(root, "cgroup.controllers"), "cpu io\n");
      expect(findCgroupBase("0::/\n", root)).toMatchObject({
        ok: false,
        problem: expect.stringContaining("memory controller is not available"),
      });
      expect(findCgroupBase("", root)).toMatchObject({ ok: false });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("measures a workspace without following links out of it", () => {
    const root = mkdtempSync(join(tmpdir(), "familiar-du-"));
    try {
      writeFileSync(join(root, "a"), Buffer.alloc(256 * 1024, 1));
      const u = workspaceUsage(root);
      expect(u.complete).toBe(true);
      expect(u.bytes).toBeGreaterThanOrEqual(256 * 1024);
      expect(workspaceUsage(root, 0).complete).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
