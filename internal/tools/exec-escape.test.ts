import { describe, expect, it } from "vitest";
import { followsLinksRecursively } from "./exec-escape.js";

describe("followsLinksRecursively", () => {
  it("spots commands told to follow symlinks while recursing, and only those", () => {
    for (const cmd of [
      "grep -R x .",
      "grep -nR x .",
      "egrep -R x .",
      "ls -LR",
      "ls -l -L -R",
      "grep --dereference-recursive x .",
    ])
      expect(followsLinksRecursively(cmd), cmd).toBe(true);
    for (const cmd of [
      "grep -r x .",
      "grep -rn x .",
      "ls -R",
      "ls -lR docs",
      "cat notes.txt",
      "git log --oneline",
    ])
      expect(followsLinksRecursively(cmd), cmd).toBe(false);
    // Any segment counts.
    expect(followsLinksRecursively("echo start && grep -R x .")).toBe(true);
  });
});
