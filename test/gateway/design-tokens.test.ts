/**
 * One visual language: the console (console/src/tokens.css) and the web chat (an inline copy in
 * internal/gateway/web/index.html, which can load no stylesheet under its CSP) carry the same token
 * block. This fails when one is edited without the other.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../helpers/daemon.js";

const block = (text: string, where: string): string => {
  const a = text.indexOf("/* tokens:begin */");
  const b = text.indexOf("/* tokens:end */");
  if (a < 0 || b < a) throw new Error(`no tokens:begin / tokens:end block in ${where}`);
  // Indentation differs (the chat's copy sits inside <style>); the declarations must not.
  return text
    .slice(a, b)
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .join("\n");
};

describe("design tokens", () => {
  it("the web chat carries the console's token block unchanged", () => {
    const console = block(
      readFileSync(join(REPO_ROOT, "console", "src", "tokens.css"), "utf8"),
      "tokens.css",
    );
    const chat = block(
      readFileSync(join(REPO_ROOT, "internal", "gateway", "web", "index.html"), "utf8"),
      "web/index.html",
    );
    expect(chat).toBe(console);
    for (const t of ["--fs-md", "--sp-4", "--good", "--bad", "--warn", "--accent"])
      expect(console).toContain(t);
  });
});
