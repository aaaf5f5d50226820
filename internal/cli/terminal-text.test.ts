import { describe, expect, it } from "vitest";
import { safeLine, safeText } from "./terminal-text.js";

describe("terminal-safe text", () => {
  it("makes every control visible; safeText keeps newlines and tabs, safeLine does not", () => {
    expect(safeLine("a\x1b[31mb\x07c\rd\ne\tf\x7fg\x9bh\u202ei\u2066j")).toBe(
      "a\\x1b[31mb\\x07c\\x0dd\\x0ae\\x09f\\x7fg\\x9bh\\u{202e}i\\u{2066}j",
    );
    expect(safeText("line 1\n\tline 2\x1b]0;t\x07")).toBe("line 1\n\tline 2\\x1b]0;t\\x07");
    expect(safeLine("Zoë 😀 日本")).toBe("Zoë 😀 日本");
  });
});
