import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../log/logger.js";
import { SkillsLoader } from "./skills-loader.js";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("SkillsLoader", () => {
  it("logs a skipped skill once per reason, and again after it loaded in between", () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-skills-"));
    const ws = join(dir, "workspace");
    const bin = join(dir, "bin");
    mkdirSync(join(ws, "skills", "needs-tool"), { recursive: true });
    mkdirSync(bin);
    writeFileSync(
      join(ws, "skills", "needs-tool", "SKILL.md"),
      "---\nname: needs-tool\ndescription: x\nrequires:\n  bins: [familiar-test-tool]\n---\nbody\n",
    );
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    let path = "/nonexistent";
    const loader = new SkillsLoader({
      workspace: () => ws,
      disabled: () => [],
      bundledDir: join(dir, "no-bundled-skills"),
      logger: createLogger({ level: "info", destination: sink, pretty: false }),
      path: () => path,
    });
    const skippedLogs = (): number =>
      lines.filter((l) => l.includes("skill skipped: missing binaries: familiar-test-tool")).length;
    loader.reload();
    loader.reload();
    expect(skippedLogs()).toBe(1);
    expect(loader.list()).toEqual([]);
    // The binary appears: the skill loads, nothing more is logged.
    writeFileSync(join(bin, "familiar-test-tool"), "#!/bin/sh\n");
    chmodSync(join(bin, "familiar-test-tool"), 0o755);
    path = bin;
    loader.reload();
    expect(loader.list().map((s) => s.name)).toEqual(["needs-tool"]);
    expect(skippedLogs()).toBe(1);
    // It goes away again: that is news, logged once more.
    path = "/nonexistent";
    loader.reload();
    loader.reload();
    expect(skippedLogs()).toBe(2);
  });
});
