/**
 * Cached reads of workspace prompt files. A file is re-read when its mtime or size changes; the stat
 * itself is throttled (once per `checkMs` per file) so a busy turn path does no needless I/O.
 */
import { statSync, readFileSync } from "node:fs";
import { join } from "node:path";

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

  /** Returns the file's text capped at `maxChars` (with a marker), or undefined when missing or blank. */
  read(workspace: string, name: string, maxChars: number): string | undefined {
    const file = join(workspace, name);
    const now = this.now();
    const hit = this.cache.get(file);
    if (hit && now - hit.checkedAt < this.checkMs) return cap(hit.text, maxChars);
    let st: { mtimeMs: number; size: number } | undefined;
    try {
      const s = statSync(file);
      st = { mtimeMs: s.mtimeMs, size: s.size };
    } catch {
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
      text = readFileSync(file, "utf8").trim();
    } catch {
      text = undefined;
    }
    if (text === "") text = undefined;
    this.cache.set(file, { text, mtimeMs: st.mtimeMs, size: st.size, checkedAt: now });
    return cap(text, maxChars);
  }
}

function cap(text: string | undefined, max: number): string | undefined {
  if (text === undefined || text.length <= max) return text;
  return `${text.slice(0, max)}\n[... truncated at ${max} characters]`;
}
