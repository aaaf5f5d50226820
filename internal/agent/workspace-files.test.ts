import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { promptText, WorkspaceFiles } from "./workspace-files.js";

describe("workspace prompt files", () => {
  it("drops notes to the owner (HTML comments) and keeps what the model needs", () => {
    expect(promptText("# Owner\n<!-- Your name, time zone -->\nName: Ada\n\n\n\nTZ: Europe/Paris\n")).toBe(
      "# Owner\n\nName: Ada\n\nTZ: Europe/Paris",
    );
    expect(promptText("a <!-- inline --> b")).toBe("a  b");
    // An unterminated comment hides the rest, as a markdown renderer would.
    expect(promptText("keep\n<!-- never closed\nhidden")).toBe("keep");
  });

  it("treats a file of headings, comments and blank lines as empty", () => {
    expect(promptText("# Memory\n<!-- Lasting facts. -->\n\n## Later\n")).toBe("");
    expect(promptText("#hashtag is text, not a heading")).toBe("#hashtag is text, not a heading");
  });

  it("leaves the shipped template's placeholder files out of the prompt", () => {
    const ws = mkdtempSync(join(tmpdir(), "familiar-wsf-"));
    writeFileSync(join(ws, "USER.md"), "# Owner\n<!-- Your name, time zone, work. -->\n");
    writeFileSync(join(ws, "SOUL.md"), "# Soul\nWarm, direct.\n<!-- edit me -->\n");
    const files = new WorkspaceFiles(0);
    expect(files.read(ws, "USER.md", 1000)).toBeUndefined();
    expect(files.read(ws, "SOUL.md", 1000)).toBe("# Soul\nWarm, direct.");
    expect(files.read(ws, "SOUL.md", 8)).toBe("# Soul\nW\n[... truncated at 8 characters]");
  });
});
