/**
 * Issue 35: the docs name only files in the repository. Every absolute path under /work/, /home/ or
 * /tmp/ written in backticks or as a link in README.md and docs/*.md is a path on some machine the
 * reader does not have.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers/daemon.js";

const DOCS = [
  "README.md",
  "BENCHMARKS.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

describe("docs", () => {
  it("name no file outside the repository", () => {
    const outside: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(REPO_ROOT, doc), "utf8");
      for (const m of text.matchAll(/(?:`|\]\()(\/(?:work|home|root)\/[^`)\s]*)/g))
        outside.push(`${doc}: ${m[1]}`);
    }
    expect(outside).toEqual([]);
  });
});
