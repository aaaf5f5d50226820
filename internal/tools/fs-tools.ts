/**
 * File tools confined to the workspace: read_file, write_file, edit_file, list_dir.
 * Every path goes through {@link resolveInWorkspace} (real-path confinement, no `..`, no escaping
 * symlinks, also for files that do not exist yet).
 */
import { lstat, mkdir, readdir, readFile, stat, writeFile, appendFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "./tool.js";
import { displayPath, resolveInWorkspace } from "./workspace-path.js";

/** Files larger than this are refused by read_file/edit_file (use line ranges on smaller files). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

async function readText(real: string, shown: string): Promise<string> {
  let st;
  try {
    st = await stat(real);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new ToolError("FILE_NOT_FOUND", `file "${shown}" does not exist`);
    throw err;
  }
  if (st.isDirectory()) throw new ToolError("FILE_IS_DIR", `"${shown}" is a directory; use list_dir`);
  // A FIFO or device would block the read (and the turn) until aborted, or never end.
  if (!st.isFile()) throw new ToolError("FILE_NOT_REGULAR", `"${shown}" is not a regular file`);
  if (st.size > MAX_FILE_BYTES)
    throw new ToolError(
      "FILE_TOO_LARGE",
      `file "${shown}" is ${st.size} bytes; the limit is ${MAX_FILE_BYTES}`,
    );
  const buf = await readFile(real);
  if (buf.subarray(0, 8192).includes(0))
    throw new ToolError("FILE_BINARY", `file "${shown}" looks binary; only text files can be read`);
  return buf.toString("utf8");
}

const readSchema = z
  .object({
    path: z.string().min(1).describe("file path relative to the workspace"),
    start_line: z.number().int().min(1).optional().describe("first line to return (1-based)"),
    end_line: z.number().int().min(1).optional().describe("last line to return (inclusive)"),
  })
  .strict();

const writeSchema = z
  .object({
    path: z.string().min(1).describe("file path relative to the workspace; parent folders are created"),
    content: z.string().describe("the full text to write"),
    append: z.boolean().optional().describe("append instead of overwriting"),
  })
  .strict();

const editSchema = z
  .object({
    path: z.string().min(1).describe("file path relative to the workspace"),
    old_text: z
      .string()
      .min(1)
      .describe("exact text to replace (must occur exactly once unless replace_all)"),
    new_text: z.string().describe("replacement text"),
    replace_all: z.boolean().optional().describe("replace every occurrence"),
  })
  .strict();

const listSchema = z
  .object({
    path: z.string().optional().describe("folder relative to the workspace (default: the workspace root)"),
    recursive: z.boolean().optional().describe("list sub-folders too (up to 3 levels)"),
  })
  .strict();

const SKIP_DIRS = new Set([".git", "node_modules"]);
const MAX_ENTRIES = 500;

/** The four file tools. */
export function createFsTools(): Tool[] {
  const readTool = defineTool({
    name: "read_file",
    group: "fs",
    description: "Read a text file in the workspace, optionally a line range (start_line..end_line).",
    schema: readSchema,
    async execute(args, _signal, ctx) {
      const real = await resolveInWorkspace(ctx.workspace, args.path);
      const text = await readText(real, args.path);
      if (args.start_line === undefined && args.end_line === undefined) return text;
      const lines = text.split("\n");
      const start = args.start_line ?? 1;
      const end = Math.min(args.end_line ?? lines.length, lines.length);
      if (start > lines.length)
        throw new ToolError("LINE_RANGE", `start_line ${start} is past the end (${lines.length} lines)`);
      if (end < start) throw new ToolError("LINE_RANGE", `end_line ${end} is before start_line ${start}`);
      return (
        `[${args.path} lines ${start}-${end} of ${lines.length}]\n` + lines.slice(start - 1, end).join("\n")
      );
    },
  });

  const writeTool = defineTool({
    name: "write_file",
    group: "fs",
    description: "Create or overwrite a text file in the workspace (or append with append=true).",
    schema: writeSchema,
    async execute(args, _signal, ctx) {
      const real = await resolveInWorkspace(ctx.workspace, args.path);
      const st = await lstat(real).catch(() => undefined);
      if (st?.isDirectory()) throw new ToolError("FILE_IS_DIR", `"${args.path}" is a directory`);
      if (st && !st.isFile()) throw new ToolError("FILE_NOT_REGULAR", `"${args.path}" is not a regular file`);
      await mkdir(dirname(real), { recursive: true });
      if (args.append) await appendFile(real, args.content);
      else await writeFile(real, args.content);
      const shown = await displayPath(ctx.workspace, real);
      return `${args.append ? "appended" : "wrote"} ${Buffer.byteLength(args.content)} bytes to ${shown}`;
    },
  });

  const editTool = defineTool({
    name: "edit_file",
    group: "fs",
    description:
      "Replace exact text in a workspace file. old_text must match exactly once (include surrounding lines to disambiguate) unless replace_all=true.",
    schema: editSchema,
    async execute(args, _signal, ctx) {
      const real = await resolveInWorkspace(ctx.workspace, args.path);
      const text = await readText(real, args.path);
      const count = text.split(args.old_text).length - 1;
      if (count === 0)
        throw new ToolError(
          "EDIT_NOT_FOUND",
          `old_text was not found in ${args.path}; read the file and copy the text exactly (whitespace included)`,
        );
      if (count > 1 && !args.replace_all)
        throw new ToolError(
          "EDIT_AMBIGUOUS",
          `old_text occurs ${count} times in ${args.path}; include more surrounding text or set replace_all=true`,
        );
      const next = args.replace_all
        ? text.split(args.old_text).join(args.new_text)
        : text.replace(args.old_text, () => args.new_text);
      await writeFile(real, next);
      return `replaced ${args.replace_all ? count : 1} occurrence(s) in ${args.path}`;
    },
  });

  const listTool = defineTool({
    name: "list_dir",
    group: "fs",
    description: "List a folder in the workspace (folders end with /, files show their size).",
    schema: listSchema,
    async execute(args, signal, ctx) {
      const real = await resolveInWorkspace(ctx.workspace, args.path ?? ".");
      const st = await stat(real).catch(() => undefined);
      if (!st) throw new ToolError("FILE_NOT_FOUND", `folder "${args.path ?? "."}" does not exist`);
      if (!st.isDirectory()) throw new ToolError("NOT_A_DIR", `"${args.path}" is a file; use read_file`);
      const out: string[] = [];
      let truncated = false;
      const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
        const entries = await readdir(dir, { withFileTypes: true });
        entries.sort((a, b) => a.name.localeCompare(b.name));
        for (const e of entries) {
          if (signal.aborted) return;
          if (out.length >= MAX_ENTRIES) {
            truncated = true;
            return;
          }
          const rel = prefix + e.name;
          if (e.isDirectory()) {
            out.push(rel + "/");
            if (args.recursive && depth < 3 && !SKIP_DIRS.has(e.name))
              await walk(join(dir, e.name), rel + "/", depth + 1);
          } else if (e.isSymbolicLink()) {
            out.push(rel + " -> (symlink)");
          } else {
            const s = await stat(join(dir, e.name)).catch(() => undefined);
            out.push(`${rel} (${s?.size ?? "?"} bytes)`);
          }
        }
      };
      await walk(real, "", 1);
      if (out.length === 0) return "(empty folder)";
      return out.join("\n") + (truncated ? `\n[listing stopped at ${MAX_ENTRIES} entries]` : "");
    },
  });

  return [readTool, writeTool, editTool, listTool] as Tool[];
}
