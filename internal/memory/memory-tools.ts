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
import { defineTool, ToolError, type Tool } from "../tools/tool.js";
import type { MemoryHit, MemoryIndex } from "./memory-index.js";
import { localDateTime } from "./local-date.js";

export { localDateTime } from "./local-date.js";

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
    query: z.string().min(1).describe("what to recall, in words or as a question"),
    sources: z
      .enum(["all", "files", "sessions"])
      .optional()
      .describe("files = memory notes only, sessions = past chats only"),
    limit: z.number().int().min(1).max(50).optional(),
  })
  .strict();

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/**
 * The memory an agent may reach (`agents.<id>.memory`): undefined = all. Only config agents can set it.
 */
function agentMemory(cfg: Config, agentId: string): readonly ("files" | "sessions")[] | undefined {
  const def = (cfg.agents as Record<string, unknown>)[agentId];
  if (typeof def !== "object" || def === null || !("memory" in def)) return undefined;
  return (def as { memory?: ("files" | "sessions")[] }).memory;
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
      const allowed = agentMemory(cfg, ctx.agentId);
      if (allowed && !allowed.includes("files"))
        throw new ToolError(
          "MEMORY_OFF",
          `memory files are off for agent ${ctx.agentId} (agents.${ctx.agentId}.memory: [${allowed.join(", ")}])`,
        );
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
      "Search long-term memory (MEMORY.md, daily notes in memory/) and past conversations by words and by meaning; returns ranked snippets with file:lines (open them with read_file), date and score.",
    schema: searchSchema,
    async execute(args, _signal, ctx) {
      const allowed = agentMemory(deps.config(), ctx.agentId);
      let sources = args.sources;
      if (allowed) {
        const asked = !sources || sources === "all" ? allowed : allowed.filter((s) => s === sources);
        if (asked.length === 0)
          throw new ToolError(
            "MEMORY_OFF",
            `${sources && sources !== "all" ? `memory ${sources}` : "memory"} is off for agent ${ctx.agentId} (agents.${ctx.agentId}.memory: [${allowed.join(", ")}])`,
          );
        sources = asked.length === 2 ? "all" : asked[0];
      }
      const hits = await deps.index.search(args.query, {
        ...(args.limit ? { limit: args.limit } : {}),
        ...(sources ? { sources } : {}),
      });
      if (hits.length === 0) return `nothing in memory matches "${args.query}"`;
      return formatHits(hits, deps.config().memory.max_result_chars);
    },
  });

  return [write, search] as Tool[];
}

/** One line per hit, then its snippet; stops before `maxChars` so a search never floods the prompt. */
export function formatHits(hits: MemoryHit[], maxChars: number): string {
  const out: string[] = [];
  let used = 0;
  for (const [i, h] of hits.entries()) {
    const lines =
      h.line === undefined
        ? ""
        : h.lineEnd !== undefined && h.lineEnd !== h.line
          ? `:${h.line}-${h.lineEnd}`
          : `:${h.line}`;
    const turn = h.session ? `, turn ${h.session.messageId}` : "";
    const meta = [h.date && h.date !== h.title ? h.date : "", `score ${h.score.toFixed(4)}`, h.match]
      .filter(Boolean)
      .join(", ");
    const entry = `${i + 1}. ${h.where}${lines}${turn}${h.title ? ` (${h.title})` : ""} [${meta}]\n   ${h.snippet}`;
    if (used + entry.length + 1 > maxChars) {
      out.push(
        `(${hits.length - i} more hit(s) left out to stay under ${maxChars} characters; narrow the query)`,
      );
      break;
    }
    out.push(entry);
    used += entry.length + 1;
  }
  return out.join("\n");
}
