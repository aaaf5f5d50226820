import { describe, expect, it } from "vitest";
import { buildProgram } from "./program.js";
import { formatTable, localTime } from "./cli-format.js";
import type { Command } from "commander";

describe("the CLI's one style", () => {
  it("prints local date-times in one format", () => {
    const ms = new Date(2026, 10, 25, 9, 5, 7).getTime(); // local time
    expect(localTime(ms)).toBe("2026-11-25 09:05:07");
    expect(localTime(null)).toBe("-");
  });

  it("puts a header over every table", () => {
    expect(formatTable(["A", "LONGER"], [["xyz", "1"]])).toEqual(["A    LONGER", "xyz  1"]);
  });

  it("help texts name the commands that exist", () => {
    const walk = (c: Command, path: string[] = []): [string, string][] =>
      c.commands.flatMap((sub) => [
        [[...path, sub.name()].join(" "), sub.description()] as [string, string],
        ...walk(sub, [...path, sub.name()]),
      ]);
    const all = walk(buildProgram());
    const memory = all.find(([name]) => name === "memory")?.[1] ?? "";
    expect(memory).toContain("reindex");
    expect(all.filter(([, d]) => /\brebuild\b/.test(d))).toEqual([]);
    const names = new Set(all.map(([n]) => n));
    expect(names).toContain("memory reindex");
    expect(names).toContain("memory status");
  });
});
