/**
 * File tools confined to the workspace: read_file, write_file, edit_file, list_dir.
 * Every path is opened with {@link openBeneath}: component by component from the workspace root, no
 * `..`, never following a symlink out of it, so a swap between a check and the open cannot escape.
 *
 * Writes follow the zones (workspace/zones.ts): the desk freely, except what another program would
 * run or obey there (a dot name, repository metadata, a manifest, another assistant's instructions:
 * workspace/desk-rules.ts), which asks first; the mind (prompt files, memory, skills, agents), whose
 * configuring files are sinks while the session is tainted (taint/sinks.ts); nothing else (the
 * owner's own files and the daemon's inbox are not the model's to write).
 */
import { constants } from "node:fs";
import { lstat, open, readdir, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { beneathSupported, openBeneath } from "./safe-open.js";
import { CATEGORY_WHY, holdReason } from "../workspace/desk-rules.js";
import { DESK, zoneOf } from "../workspace/zones.js";
import { defineTool, ToolError, type Tool, type ToolContext } from "./tool.js";

/** Files larger than this are refused by read_file/edit_file (use line ranges on smaller files). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

/** Reads a whole regular text file from an open handle (size and binary checks first). */
async function readHandle(fh: FileHandle, shown: string): Promise<string> {
  const st = await fh.stat();
  if (st.isDirectory()) throw new ToolError("FILE_IS_DIR", `"${shown}" is a directory; use list_dir`);
  // A FIFO or device would block the read (and the turn) until aborted, or never end.
  if (!st.isFile()) throw new ToolError("FILE_NOT_REGULAR", `"${shown}" is not a regular file`);
  if (st.size > MAX_FILE_BYTES)
    throw new ToolError(
      "FILE_TOO_LARGE",
      `file "${shown}" is ${st.size} bytes; the limit is ${MAX_FILE_BYTES}`,
    );
  const buf = await fh.readFile();
  if (buf.subarray(0, 8192).includes(0))
    throw new ToolError("FILE_BINARY", `file "${shown}" looks binary; only text files can be read`);
  return buf.toString("utf8");
}

/** Runs `fn` on the handle and closes it. */
async function using<T>(h: { handle: FileHandle }, fn: (fh: FileHandle) => Promise<T>): Promise<T> {
  try {
    return await fn(h.handle);
  } finally {
    await h.handle.close().catch(() => undefined);
  }
}

/** Desk categories a file tool's write asks about (`code` is what the model writes all day). */
const ASK_ON_DESK = new Set(["hidden", "vcs", "packages", "instructions", "link"]);

/**
 * The gate of write_file and edit_file (see the module comment): refuses a path outside the desk and
 * the mind, and asks before a desk file another program would run or obey.
 */
/**
 * Refuses a path this turn may not use (ToolContext.withheld: a shared chat and the owner's private
 * files), by the real path about to be opened, so a symlink cannot lead around the check.
 */
export function viewGate(ctx: Pick<ToolContext, "withheld">): (rel: string) => Promise<void> {
  return async (rel) => {
    const why = ctx.withheld?.refusal(rel);
    if (why) throw new ToolError("PRIVATE_FILE", why);
  };
}

function writeGate(ctx: ToolContext, tool: string, content: string) {
  const view = viewGate(ctx);
  return async (rel: string): Promise<void> => {
    await view(rel);
    const zone = zoneOf(rel);
    const first = (rel.split("/")[0] ?? "").toLowerCase();
    if (zone === "other" || (zone === "desk" && first === rel.toLowerCase()))
      throw new ToolError(
        "WRITE_OUTSIDE_DESK",
        `"${rel}" is not on the desk: write your files under ${DESK}/ (the folder commands run in); ` +
          "the rest of the workspace belongs to the owner",
      );
    if (zone === "mind" && first === "inbox")
      throw new ToolError(
        "WRITE_INBOX",
        `"${rel}" is in inbox/, which only the daemon writes (files sent in chats)`,
      );
    if (zone !== "desk") return;
    const category = holdReason({ rel: rel.slice(rel.indexOf("/") + 1), kind: "file", mode: 0o600 });
    if (!category || !ASK_ON_DESK.has(category)) return;
    const reason = CATEGORY_WHY[category];
    if (!(ctx.approvalTarget ?? ctx.replyTarget))
      throw new ToolError(
        "FILE_NEEDS_APPROVAL",
        `refused: ${rel} is one of the ${reason}, and this session has no channel to ask the owner on`,
      );
    const decision = await ctx.requestApproval({
      kind: "file",
      summary: `${tool} ${rel}\n(${category}: ${reason})\n---\n${content}`,
    });
    if (decision === "denied") throw new ToolError("FILE_DENIED", `the owner denied writing ${rel}`);
    if (decision === "expired")
      throw new ToolError("FILE_APPROVAL_EXPIRED", `the approval request for ${rel} expired; not written`);
  };
}

const readSchema = z
  .object({
    path: z.string().min(1).describe("workspace-relative path"),
    start_line: z.number().int().min(1).optional().describe("first line (1-based)"),
    end_line: z.number().int().min(1).optional().describe("last line (inclusive)"),
  })
  .strict();

const writeSchema = z
  .object({
    path: z.string().min(1).describe("workspace-relative path (folders are created)"),
    content: z.string(),
    append: z.boolean().optional(),
  })
  .strict();

const editSchema = z
  .object({
    path: z.string().min(1).describe("file path relative to the workspace"),
    old_text: z.string().min(1).describe("exact text; must occur once unless replace_all"),
    new_text: z.string(),
    replace_all: z.boolean().optional(),
  })
  .strict();

const listSchema = z
  .object({
    path: z.string().optional().describe("workspace-relative folder (default: root)"),
    recursive: z.boolean().optional().describe("3 levels deep"),
  })
  .strict();

/** edit_file's work on an open (read-write) handle. */
async function editHandle(fh: FileHandle, args: z.infer<typeof editSchema>): Promise<string> {
  const text = await readHandle(fh, args.path);
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
  await fh.truncate(0);
  await fh.write(next, 0, "utf8");
  return `replaced ${args.replace_all ? count : 1} occurrence(s) in ${args.path}`;
}

const O_DIR_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path to read a held folder through: its descriptor where /proc exists, else its real path. */
function dirPath(dir: FileHandle, workspace: string, rel: string, prefix: string): string {
  return beneathSupported() ? `/proc/self/fd/${dir.fd}` : join(workspace, rel, prefix);
}

const SKIP_DIRS = new Set([".git", "node_modules"]);
const MAX_ENTRIES = 500;

/** The four file tools. */
export function createFsTools(): Tool[] {
  const readTool = defineTool({
    name: "read_file",
    group: "fs",
    description: "Read a workspace text file, optionally a line range.",
    schema: readSchema,
    async execute(args, _signal, ctx) {
      const opened = await openBeneath(ctx.workspace, args.path, { mode: "r", beforeOpen: viewGate(ctx) });
      const text = await using(opened, (fh) => readHandle(fh, args.path));
      // Said by identity, so a label on the file (or a folder above it) taints the reader.
      const reads = { files: [opened.rel] };
      if (args.start_line === undefined && args.end_line === undefined) return { content: text, reads };
      const lines = text.split("\n");
      const start = args.start_line ?? 1;
      const end = Math.min(args.end_line ?? lines.length, lines.length);
      if (start > lines.length)
        throw new ToolError("LINE_RANGE", `start_line ${start} is past the end (${lines.length} lines)`);
      if (end < start) throw new ToolError("LINE_RANGE", `end_line ${end} is before start_line ${start}`);
      return {
        content:
          `[${args.path} lines ${start}-${end} of ${lines.length}]\n` +
          lines.slice(start - 1, end).join("\n"),
        reads,
      };
    },
  });

  const writeTool = defineTool({
    name: "write_file",
    group: "fs",
    description:
      "Create, overwrite or append to a text file on the desk (desk/..., where commands run) or in your mind (MEMORY.md, memory/, skills/, agents/, the prompt files).",
    schema: writeSchema,
    async execute(args, _signal, ctx) {
      const opened = await openBeneath(ctx.workspace, args.path, {
        mode: args.append ? "a" : "w",
        mkdirs: true,
        beforeOpen: writeGate(ctx, "write_file", args.content),
      });
      await using(opened, async (fh) => {
        const st = await fh.stat();
        if (!st.isFile()) throw new ToolError("FILE_NOT_REGULAR", `"${args.path}" is not a regular file`);
        if (!args.append) await fh.truncate(0);
        await fh.writeFile(args.content);
      });
      const shown = opened.rel;
      return {
        content: `${args.append ? "appended" : "wrote"} ${Buffer.byteLength(args.content)} bytes to ${shown}`,
        writes: { files: [shown] },
      };
    },
  });

  const editTool = defineTool({
    name: "edit_file",
    group: "fs",
    description:
      "Replace exact text in a workspace file (include surrounding lines to make old_text unique).",
    schema: editSchema,
    async execute(args, _signal, ctx) {
      const opened = await openBeneath(ctx.workspace, args.path, {
        mode: "rw",
        beforeOpen: writeGate(ctx, "edit_file", `replace:\n${args.old_text}\nwith:\n${args.new_text}`),
      });
      const done = await using(opened, (fh) => editHandle(fh, args));
      return { content: done, reads: { files: [opened.rel] }, writes: { files: [opened.rel] } };
    },
  });
  const listTool = defineTool({
    name: "list_dir",
    group: "fs",
    description: "List a workspace folder (folders end with /, files show sizes).",
    schema: listSchema,
    async execute(args, signal, ctx) {
      const shown = args.path ?? ".";
      const opened = await openBeneath(ctx.workspace, shown, { mode: "d", beforeOpen: viewGate(ctx) }).catch(
        (err: unknown) => {
          if (err instanceof ToolError && err.code === "FILE_NOT_FOUND")
            throw new ToolError("FILE_NOT_FOUND", `folder "${shown}" does not exist`);
          if (err instanceof ToolError && err.code === "NOT_A_DIR")
            throw new ToolError("NOT_A_DIR", `"${shown}" is a file; use read_file`);
          throw err;
        },
      );
      const out: string[] = [];
      let truncated = false;
      // Each sub-folder is opened relative to its parent's descriptor with O_NOFOLLOW (safe-open.ts),
      // so a folder swapped for a symlink mid-listing is not descended into.
      const walk = async (dir: FileHandle, prefix: string, depth: number): Promise<void> => {
        const base = dirPath(dir, ctx.workspace, opened.rel, prefix);
        const entries = await readdir(base, { withFileTypes: true });
        entries.sort((a, b) => a.name.localeCompare(b.name));
        for (const e of entries) {
          if (signal.aborted) return;
          // A shared turn's listing leaves out what it may not use (the workspace root's private files).
          if (
            ctx.withheld?.refusal(opened.rel === "." ? prefix + e.name : `${opened.rel}/${prefix}${e.name}`)
          )
            continue;
          if (out.length >= MAX_ENTRIES) {
            truncated = true;
            return;
          }
          const rel = prefix + e.name;
          if (e.isDirectory()) {
            out.push(rel + "/");
            if (args.recursive && depth < 3 && !SKIP_DIRS.has(e.name)) {
              const sub = await open(join(base, e.name), O_DIR_NOFOLLOW).catch(() => undefined);
              if (sub)
                await walk(sub, rel + "/", depth + 1).finally(() => sub.close().catch(() => undefined));
            }
          } else if (e.isSymbolicLink()) {
            out.push(rel + " -> (symlink)");
          } else {
            const st = await lstat(join(base, e.name)).catch(() => undefined);
            out.push(`${rel} (${st?.size ?? "?"} bytes)`);
          }
        }
      };
      await using(opened, (fh) => walk(fh, "", 1));
      if (out.length === 0) return "(empty folder)";
      return out.join("\n") + (truncated ? `\n[listing stopped at ${MAX_ENTRIES} entries]` : "");
    },
  });

  return [readTool, writeTool, editTool, listTool] as Tool[];
}
