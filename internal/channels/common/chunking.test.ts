import { describe, expect, it } from "vitest";
import { chunkMarkdown, DISCORD_LIMITS, TELEGRAM_LIMITS } from "./chunking.js";

/** Fence balance per chunk: every chunk opens and closes its code blocks. */
function fencesBalanced(chunk: string): boolean {
  let open = false;
  for (const line of chunk.split("\n")) if (/^ {0,3}```/.test(line)) open = !open;
  return !open;
}

describe("chunkMarkdown", () => {
  it("keeps short text whole and drops empty text", () => {
    expect(chunkMarkdown("hello", TELEGRAM_LIMITS)).toEqual(["hello"]);
    expect(chunkMarkdown("  \n ", TELEGRAM_LIMITS)).toEqual([]);
  });

  it("prefers paragraph, then line, then sentence boundaries", () => {
    const p1 = "a".repeat(60);
    const p2 = "b".repeat(60);
    expect(chunkMarkdown(`${p1}\n\n${p2}`, { maxLength: 100 })).toEqual([p1, p2]);
    expect(chunkMarkdown(`${p1}\n${p2}`, { maxLength: 100 })).toEqual([p1, p2]);
    const s = `${"First sentence here. ".repeat(3)}Second one goes on and on and on and on.`;
    const chunks = chunkMarkdown(s, { maxLength: 70 });
    expect(chunks[0]?.endsWith(".")).toBe(true);
    expect(chunks.join(" ").replace(/\s+/g, " ")).toBe(s.trim().replace(/\s+/g, " "));
  });

  it("closes and reopens a code fence with its language", () => {
    const code = "```ts\n" + Array.from({ length: 40 }, (_, i) => `const v${i} = ${i};`).join("\n") + "\n```";
    const chunks = chunkMarkdown(`Intro.\n\n${code}\n\nOutro.`, { maxLength: 300 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(300);
      expect(fencesBalanced(c)).toBe(true);
    }
    for (const c of chunks.slice(1, -1)) expect(c.startsWith("```ts\n")).toBe(true);
    const all = chunks.join("\n");
    for (let i = 0; i < 40; i++) expect(all).toContain(`const v${i} = ${i};`);
  });

  it("respects Discord's line limit", () => {
    const text = Array.from({ length: 60 }, (_, i) => `line ${i}`).join("\n");
    const chunks = chunkMarkdown(text, DISCORD_LIMITS);
    for (const c of chunks) expect(c.split("\n").length).toBeLessThanOrEqual(17);
    expect(chunks.join("\n")).toBe(text);
  });

  it("hard-cuts a single enormous word without losing characters", () => {
    const word = "x".repeat(10_000);
    const chunks = chunkMarkdown(word, TELEGRAM_LIMITS);
    expect(chunks.every((c) => c.length <= 4096)).toBe(true);
    expect(chunks.join("")).toBe(word);
  });

  it("handles a long mixed document within limits", () => {
    let doc = "";
    for (let i = 0; doc.length < 12_000; i++)
      doc += `## Part ${i}\n\n${"Some words. ".repeat(40)}\n\n~~~py\n${"print(1)\n".repeat(30)}~~~\n\n`;
    for (const limits of [TELEGRAM_LIMITS, DISCORD_LIMITS]) {
      const chunks = chunkMarkdown(doc, limits);
      for (const c of chunks) {
        expect(c.length).toBeLessThanOrEqual(limits.maxLength);
        if (limits.maxLines) expect(c.split("\n").length).toBeLessThanOrEqual(limits.maxLines);
        let open = false;
        for (const line of c.split("\n")) if (/^~~~/.test(line)) open = !open;
        expect(open).toBe(false);
      }
    }
  });
});
