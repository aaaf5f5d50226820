/**
 * The console renders transcripts with the web chat's safe markdown renderer: the console's typed
 * copy (console/src/markdown.ts) and the web chat's inline `md` must give the same HTML, and neither
 * may let markup from a message through.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { md } from "../../console/src/markdown.js";
import { REPO_ROOT } from "../helpers/daemon.js";

/** The web chat's own `md`, cut out of its page and run alone. */
function webChatMd(): (s: string) => string {
  const html = readFileSync(join(REPO_ROOT, "internal", "gateway", "web", "index.html"), "utf8");
  const start = html.indexOf("const esc = (s) =>");
  const end = html.indexOf('return out.join("");', start);
  if (start < 0 || end < 0) throw new Error("the web chat's md renderer was not found in index.html");
  const src = html.slice(start, end) + 'return out.join(""); }\nmd;';
  return runInNewContext(src) as (s: string) => string;
}

const INPUTS = [
  "plain text",
  "# Title\n\nA **bold** and *italic* ~~gone~~ `code` [link](https://example.org).",
  "- one\n- two\n\n1. first\n2. second",
  "```ts\nconst x = '<b>';\n```\nafter",
  '<img src=x onerror="alert(1)"> <script>alert(2)</script>',
  "[bad](javascript:alert(1)) [ok](mailto:a@b.c)",
  "a \"quote\" & an 'apostrophe'",
];

describe("console markdown = the web chat's renderer", () => {
  const web = webChatMd();
  it.each(INPUTS)("renders %j the same way", (input) => {
    expect(md(input)).toBe(web(input));
  });
  it("never lets a tag or an unsafe link through", () => {
    const out = md(INPUTS[4]! + "\n" + INPUTS[5]!);
    expect(out).not.toMatch(/<img|<script|href="javascript/i);
    expect(out).toContain("&lt;script&gt;");
    expect(md("**x**")).toBe("<p><strong>x</strong></p>");
  });
});
