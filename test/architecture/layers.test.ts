/**
 * The layer check (`npm run lint:layers`) refuses an upward import and an import circle. Runs the real
 * dependency-cruiser CLI with the project's real config and the layer order read from the real
 * docs/architecture.md, over a small fixture tree in a temp folder.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const depcruise = join(root, "node_modules", ".bin", "depcruise");
let dir: string | undefined;

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A temp project with the real config and doc, and the given source files. */
function fixture(files: Record<string, string>): string {
  dir = mkdtempSync(join(tmpdir(), "familiar-layers-"));
  mkdirSync(join(dir, "docs"));
  copyFileSync(join(root, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  copyFileSync(join(root, "docs", "architecture.md"), join(dir, "docs", "architecture.md"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", strict: true } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

function check(cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(
      depcruise,
      ["internal", "--config", ".dependency-cruiser.cjs", "--output-type", "err"],
      { cwd },
      (err, stdout, stderr) => done({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe("the layer check", () => {
  it("passes imports that only point down", async () => {
    const cwd = fixture({
      "internal/core/outbox.ts": "export interface Outbox { lastTarget(): string | undefined }\n",
      "internal/cron/runner.ts":
        'import type { Outbox } from "../core/outbox.js";\nexport type R = Outbox;\n',
    });
    const r = await check(cwd);
    expect(r.out).toContain("no dependency violations");
    expect(r.code).toBe(0);
  });

  it("fails on an upward import and names the rule", async () => {
    const cwd = fixture({
      "internal/channels/registry.ts": "export class ChannelRegistry {}\n",
      "internal/cron/runner.ts":
        'import { ChannelRegistry } from "../channels/registry.js";\nexport const r = new ChannelRegistry();\n',
    });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("layer:internal/cron");
    expect(r.out).toContain("internal/cron/runner.ts → internal/channels/registry.ts");
  });

  it("fails when core imports anything", async () => {
    const cwd = fixture({
      "internal/log/logger.ts": "export type Logger = { info(m: string): void };\n",
      "internal/core/context.ts":
        'import type { Logger } from "../log/logger.js";\nexport type C = Logger;\n',
    });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("core-imports-nothing");
  });

  it("fails on a sideways import between folders of one layer", async () => {
    const cwd = fixture({
      "internal/heartbeat/beat.ts": "export const beat = 1;\n",
      "internal/cron/runner.ts": 'import { beat } from "../heartbeat/beat.js";\nexport const r = beat;\n',
    });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("layer:internal/cron");
  });

  it("fails on an import circle inside one folder", async () => {
    const cwd = fixture({
      "internal/cron/a.ts": 'import type { B } from "./b.js";\nexport type A = { b?: B };\n',
      "internal/cron/b.ts": 'import type { A } from "./a.js";\nexport type B = { a?: A };\n',
    });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("no-circular");
  });

  it("fails on a folder of internal/ that has no place in the layer order", async () => {
    const cwd = fixture({ "internal/newroom/a.ts": "export const a = 1;\n" });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("internal/newroom/ is not in the layer order of docs/architecture.md");
  });

  it("fails when a module that reads the workspace uses node:fs instead of the workspace door", async () => {
    const cwd = fixture({
      "internal/heartbeat/beat.ts":
        'import { readFileSync } from "node:fs";\nexport const beat = (p: string) => readFileSync(p, "utf8");\n',
      "internal/memory/notes.ts":
        'import { appendFile } from "node:fs/promises";\nexport const note = (p: string) => appendFile(p, "x");\n',
    });
    const r = await check(cwd);
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("workspace-through-the-door");
    expect(r.out).toContain("internal/heartbeat/beat.ts");
    expect(r.out).toContain("internal/memory/notes.ts");
  });

  it("lets the workspace door itself and the allowlisted files use node:fs", async () => {
    const cwd = fixture({
      "internal/workspace/door.ts": 'import { openSync } from "node:fs";\nexport const o = openSync;\n',
      "internal/skills/bin-on-path.ts":
        'import { accessSync } from "node:fs";\nexport const a = accessSync;\n',
    });
    const r = await check(cwd);
    expect(r.out).toContain("no dependency violations");
    expect(r.code).toBe(0);
  });
});
