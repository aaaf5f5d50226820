/**
 * Memory tools: `memory_write` (dated note in memory/YYYY-MM-DD.md, or a lasting fact in MEMORY.md)
 * and `memory_search` (FTS5 over memory files and past transcripts, see {@link MemoryIndex}).
 * Dates and times are in the owner's configured time zone (`timezone`).
 */
import { appendFile, mkdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { defineTool, type Tool } from "../tools/tool.js";
import type { MemoryIndex } from "./memory-index.js";

const writeSchema = z
  .object({
    text: z.string().min(1).max(20_000).describe("what to remember, in plain words"),
    kind: z
      .enum(["note", "fact"])
      .optional()
      .describe("note (default): today's dated journal entry; fact: a lasting fact for MEMORY.md"),
  })
  .strict();

const searchSchema = z
  .object({
    query: z.string().min(1).describe("words to look for"),
    sources: z
      .enum(["all", "files", "sessions"])
      .optional()
      .describe("files = memory notes only, sessions = past chats only"),
    limit: z.number().int().min(1).max(50).optional(),
  })
  .strict();

/** `YYYY-MM-DD` and `HH:MM` of an instant in a time zone. */
export function localDateTime(ms: number, timeZone: string): { date: string; time: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  return { date: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}` };
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

export function createMemoryTools(deps: { config: () => Config; clock: Clock; index: MemoryIndex }): Tool[] {
  const write = defineTool({
    name: "memory_write",
    group: "memory",
    description:
      "Remember something: kind=note appends a timestamped line to today's journal (memory/YYYY-MM-DD.md); kind=fact adds a lasting fact to MEMORY.md.",
    schema: writeSchema,
    async execute(args, _signal, ctx) {
      const cfg = deps.config();
      const root = resolve(ctx.workspace || cfg.workspace);
      const { date, time } = localDateTime(deps.clock.now(), cfg.timezone);
      const text = args.text.trim().replace(/\r\n/g, "\n");
      let rel: string;
      let entry: string;
      if (args.kind === "fact") {
        rel =
          (await exists(join(root, "memory.md"))) && !(await exists(join(root, "MEMORY.md")))
            ? "memory.md"
            : "MEMORY.md";
        const abs = join(root, rel);
        const prev = await readFile(abs, "utf8").catch(() => "");
        entry = (prev && !prev.endsWith("\n") ? "\n" : "") + `- ${text.replace(/\n/g, "\n  ")} (${date})\n`;
        await appendFile(abs, prev ? entry : `# Memory\n\n${entry}`);
      } else {
        rel = `memory/${date}.md`;
        const abs = join(root, rel);
        await mkdir(join(root, "memory"), { recursive: true });
        const fresh = !(await exists(abs));
        entry = `- ${time} ${text.replace(/\n/g, "\n  ")}\n`;
        await appendFile(abs, fresh ? `# ${date}\n\n${entry}` : entry);
      }
      try {
        deps.index.syncFile(rel);
      } catch (err) {
        // The note is on disk; the index catches up on the next search.
        ctx.logger.warn({ err: (err as Error).message }, "memory index update failed");
      }
      return `saved to ${rel}`;
    },
  });

  const search = defineTool({
    name: "memory_search",
    group: "memory",
    description:
      "Search long-term memory (MEMORY.md, daily notes in memory/) and past conversations; returns ranked snippets with where they came from.",
    schema: searchSchema,
    async execute(args) {
      const hits = deps.index.search(args.query, {
        ...(args.limit ? { limit: args.limit } : {}),
        ...(args.sources ? { sources: args.sources } : {}),
      });
      if (hits.length === 0) return `nothing in memory matches "${args.query}"`;
      return hits
        .map((h, i) => {
          const where = h.line !== undefined ? `${h.where}:${h.line}` : h.where;
          return `${i + 1}. ${where}${h.title ? ` (${h.title})` : ""}\n   ${h.snippet}`;
        })
        .join("\n");
    },
  });

  return [write, search] as Tool[];
}
