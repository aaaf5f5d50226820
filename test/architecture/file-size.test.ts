/**
 * Rooms of one purpose (issue 20): no source file in internal/ is over 400 lines, and a file over 300
 * says in its header why it stays one file ("Over 300 lines on purpose: ..."). Reads the real tree.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/daemon.js";

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (/\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

const files = sources(join(REPO_ROOT, "internal")).map((p) => {
  const text = readFileSync(p, "utf8");
  return {
    path: relative(REPO_ROOT, p),
    lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0),
    text,
  };
});

describe("file sizes", () => {
  it("finds the sources", () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it("no source file in internal/ is over 400 lines", () => {
    expect(files.filter((f) => f.lines > 400).map((f) => `${f.path}: ${f.lines}`)).toEqual([]);
  });

  it("every file over 300 lines says why in its header", () => {
    const silent = files.filter(
      (f) => f.lines > 300 && !/Over 300 lines on purpose:/.test(f.text.split("\n").slice(0, 40).join("\n")),
    );
    expect(silent.map((f) => `${f.path}: ${f.lines}`)).toEqual([]);
  });
});
