/**
 * Memory tools: `memory_write` (dated note in memory/YYYY-MM-DD.md, or a lasting fact in MEMORY.md)
 * and `memory_search` (FTS5 over memory files and past transcripts, see {@link MemoryIndex}).
 * Dates and times are in the owner's configured time zone (`timezone`).
 */
import { resolve } from "node:path";
import { z } from "zod";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import { defineTool, ToolError, type Tool } from "../tools/tool.js";
import type { MemoryHit, MemoryIndex } from "./memory-index.js";
import { localDateTime } from "./local-date.js";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { reportRefusal } from "../workspace/refusal-log.js";
import {
  appendWorkspaceFileSync,
  readWorkspaceFileSync,
  statWorkspaceFileSync,
} from "../workspace/workspace-door.js";

/** A memory file bigger than this is not read whole (the index and the tool refuse it). */
export const MAX_MEMORY_FILE_BYTES = 8 * 1024 * 1024;

export { localDateTime } from "./local-date.js";

const writeSchema = z
  .object({
    text: z.string().min(1).max(20_000),
    kind: z.enum(["note", "fact"]).optional(),
  })
  .strict();

const searchSchema = z
  .object({
    query: z.string().min(1),
    sources: z.enum(["all", "files", "sessions"]).optional(),
    limit: z.number().int().min(1).max(50).optional(),
  })
  .strict();

/** True when the workspace holds `rel` as a regular file (a link there counts as present: never replaced). */
function exists(root: string, rel: string): boolean {
  try {
    return statWorkspaceFileSync(root, rel) !== undefined;
  } catch {
    return true;
  }
}

/** `text`, preceded by a newline when the file does not end with one (an owner's edit). */
function startOnNewLine(root: string, rel: string, text: string): string {
  try {
    const prev = readWorkspaceFileSync(root, rel, { maxBytes: MAX_MEMORY_FILE_BYTES });
    return prev && prev.text && !prev.text.endsWith("\n") ? `\n${text}` : text;
  } catch {
    return text;
  }
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
    description: "Remember: note (default) goes to today's journal memory/YYYY-MM-DD.md, fact to MEMORY.md.",
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
      // Through the workspace door: MEMORY.md or memory/ planted as a link (to ~/.ssh/authorized_keys)
      // is refused, named in one log line, and the model gets a clear tool error; nothing is written.
      try {
        if (args.kind === "fact") {
          rel = exists(root, "memory.md") && !exists(root, "MEMORY.md") ? "memory.md" : "MEMORY.md";
          const body = `- ${text.replace(/\n/g, "\n  ")} (${date})\n`;
          appendWorkspaceFileSync(root, rel, startOnNewLine(root, rel, body), {
            initial: `# Memory\n\n${body}`,
          });
        } else {
          rel = `memory/${date}.md`;
          const entry = `- ${time} ${text.replace(/\n/g, "\n  ")}\n`;
          appendWorkspaceFileSync(root, rel, entry, { mkdirs: true, initial: `# ${date}\n\n${entry}` });
        }
      } catch (err) {
        if (!isWorkspaceError(err)) throw err;
        reportRefusal(err, "memory_write");
        throw new ToolError("MEMORY_REFUSED", `memory not saved: ${err.message}`);
      }
      try {
        deps.index.syncFile(rel);
      } catch (err) {
        // The note is on disk; the index catches up on the next search.
        ctx.logger.warn({ err: (err as Error).message }, "memory index update failed");
      }
      return { content: `saved to ${rel}`, writes: { files: [rel] } };
    },
  });

  const search = defineTool({
    name: "memory_search",
    group: "memory",
    description: "Search memory files and past chats by words and meaning; returns snippets with file:lines.",
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
        // The query's embedding is in the ledger under this turn.
        cause: { requestId: ctx.requestId, sessionKey: ctx.sessionKey, agentId: ctx.agentId },
      });
      if (hits.length === 0) return `nothing in memory matches "${args.query}"`;
      // What was read, by identity: a labelled file or a tainted session's transcript taints the reader.
      const reads = {
        files: hits.filter((h) => h.source === "file").map((h) => h.where),
        messageIds: hits.flatMap((h) => (h.session ? [h.session.messageId] : [])),
      };
      return { content: formatHits(hits, deps.config().memory.max_result_chars), reads };
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
