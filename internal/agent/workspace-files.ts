/**
 * Cached reads of workspace prompt files. A file is re-read when its mtime or size changes; the stat
 * itself is throttled (once per `checkMs` per file) so a busy turn path does no needless I/O.
 *
 * Every read goes through the workspace door (internal/workspace/workspace-door.ts): a prompt file
 * that is a symlink (`SOUL.md -> /proc/self/environ`), sits in a linked folder, is not a regular file
 * or is over {@link MAX_PROMPT_FILE_BYTES} is left out of the prompt, and the refusal is logged once.
 */
import { reportRefusal } from "../workspace/refusal-log.js";
import { readWorkspaceFileSync, statWorkspaceFileSync } from "../workspace/workspace-door.js";

/** A prompt file bigger than this is refused whole (the prompt keeps far fewer characters anyway). */
export const MAX_PROMPT_FILE_BYTES = 1024 * 1024;

interface Entry {
  text: string | undefined;
  mtimeMs: number;
  size: number;
  checkedAt: number;
}

export class WorkspaceFiles {
  private cache = new Map<string, Entry>();
  constructor(
    private checkMs = 1000,
    private now: () => number = Date.now,
  ) {}

  /**
   * Returns the file's text for the prompt, capped at `maxChars` (with a marker), or undefined when
   * missing or without content (see {@link promptText}).
   */
  read(workspace: string, name: string, maxChars: number): string | undefined {
    const file = `${workspace}\0${name}`;
    const now = this.now();
    const hit = this.cache.get(file);
    if (hit && now - hit.checkedAt < this.checkMs) return cap(hit.text, maxChars);
    let st: { mtimeMs: number; size: number } | undefined;
    try {
      st = statWorkspaceFileSync(workspace, name);
    } catch (err) {
      reportRefusal(err, "prompt file");
      st = undefined;
    }
    if (!st) {
      this.cache.set(file, { text: undefined, mtimeMs: 0, size: -1, checkedAt: now });
      return undefined;
    }
    if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) {
      hit.checkedAt = now;
      return cap(hit.text, maxChars);
    }
    let text: string | undefined;
    try {
      const f = readWorkspaceFileSync(workspace, name, { maxBytes: MAX_PROMPT_FILE_BYTES });
      text = f === undefined ? undefined : promptText(f.text);
    } catch (err) {
      reportRefusal(err, "prompt file");
      text = undefined;
    }
    if (text === "") text = undefined;
    this.cache.set(file, { text, mtimeMs: st.mtimeMs, size: st.size, checkedAt: now });
    return cap(text, maxChars);
  }
}

/**
 * What of a workspace file the model needs: HTML comments are notes to the owner (the shipped
 * templates explain each file in one), so they are dropped; a file left with only headings and blank
 * lines says nothing and is "" (left out of the prompt; every turn would pay for it).
 */
export function promptText(raw: string): string {
  const text = raw
    .replace(/<!--[\s\S]*?(?:-->|$)/g, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  const saysSomething = text.split("\n").some((l) => l.trim() !== "" && !/^#{1,6}(\s|$)/.test(l.trim()));
  return saysSomething ? text : "";
}

function cap(text: string | undefined, max: number): string | undefined {
  if (text === undefined || text.length <= max) return text;
  return `${text.slice(0, max)}\n[... truncated at ${max} characters]`;
}
