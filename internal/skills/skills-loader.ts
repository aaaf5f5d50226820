/**
 * Skills: folders holding a SKILL.md (YAML front matter `name`, `description`, optional
 * `requires: {bins, env}` and `always`, then markdown instructions).
 *
 * Invariants:
 * - roots are scanned in order `<workspace>/skills`, then the bundled `skills/`; the first skill of a
 *   name wins (the owner's workspace overrides what we ship);
 * - a skill with missing requirements or listed in `skills.disabled` is skipped, logged once per
 *   distinct reason (not on every rescan);
 * - only front matter is kept in memory; bodies are read on demand (`skill` tool, `always` skills);
 * - the prompt section lists names and one-line descriptions only, plus the full text of `always` skills;
 * - every SKILL.md is read through the workspace door: a skill folder or SKILL.md that is a link
 *   (`SKILL.md -> ~/.ssh/id_ed25519`) is skipped and named, never followed; a file over
 *   {@link MAX_SKILL_BYTES} is skipped;
 * - a workspace skill describes, it never grants (docs/security.md, invariant 2): front matter that
 *   would choose a program, tools, MCP servers, an engine or settings ({@link POWER_KEYS}) skips the
 *   skill, naming the file and the key.
 *
 * Over 300 lines on purpose: discovery, the refusals (links, size, power keys, requirements) and the
 * hot reload all work on one name-to-skill map and its once-per-reason skip log.
 */
import { join, resolve, sep } from "node:path";
import { parse as parseYaml } from "yaml";
import type { Logger } from "../log/logger.js";
import { packageRoot } from "../config/package-root.js";
import { reportRefusal } from "../workspace/refusal-log.js";
import { isWorkspaceError } from "../workspace/workspace-error.js";
import { listWorkspaceDirSync, readWorkspaceFileSync } from "../workspace/workspace-door.js";
import { onPath } from "./bin-on-path.js";

/** A SKILL.md bigger than this is skipped (the body goes into the model's context). */
export const MAX_SKILL_BYTES = 256 * 1024;

/**
 * Front-matter keys that would grant power in some skill format (a program to run, tools, MCP
 * servers, an engine, hooks, settings): only config.yaml grants those, so a workspace skill with one
 * is skipped, named.
 */
export const POWER_KEYS = [
  "allowed-tools",
  "allowed_tools",
  "tools",
  "command",
  "commands",
  "engine",
  "mcp",
  "mcp_servers",
  "mcpServers",
  "hooks",
  "env",
  "sandbox",
  "exec",
  "approvals",
  "routing",
  "budgets",
] as const;

export interface SkillInfo {
  name: string;
  description: string;
  /** Absolute folder of the skill. */
  dir: string;
  file: string;
  /** The root the door reads from and SKILL.md's path beneath it. */
  root: string;
  rel: string;
  source: "workspace" | "bundled";
  always: boolean;
}

export interface SkippedSkill {
  name: string;
  dir: string;
  reason: string;
}

export interface SkillsLoaderOptions {
  /** The workspace (read on every scan: it may change on reload). */
  workspace: () => string;
  /** Names in `skills.disabled`. */
  disabled: () => readonly string[];
  /** The bundled skills folder (default: `<package root>/skills`). */
  bundledDir?: string;
  logger?: Logger;
  /** PATH used to find required binaries (default: process.env.PATH). */
  path?: () => string;
  env?: () => NodeJS.ProcessEnv;
}

/** Splits SKILL.md into front matter (parsed YAML) and body. */
export function parseSkillFile(text: string): { meta: Record<string, unknown>; body: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!m) return { meta: {}, body: text };
  const meta: unknown = parseYaml(m[1] ?? "");
  return {
    meta: meta && typeof meta === "object" ? (meta as Record<string, unknown>) : {},
    body: m[2] ?? "",
  };
}

const strList = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : typeof v === "string" ? [v] : [];

export class SkillsLoader {
  private skills = new Map<string, SkillInfo>();
  private skipped: SkippedSkill[] = [];
  private logged = new Map<string, string>();
  private watcher: { close(): Promise<void> } | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private listeners = new Set<() => void>();
  private alwaysCache = new Map<string, string>();
  readonly bundledDir: string;

  constructor(private opts: SkillsLoaderOptions) {
    this.bundledDir = opts.bundledDir ?? join(packageRoot(), "skills");
    this.reload();
  }

  private roots(): { root: string; prefix: string; dir: string; source: SkillInfo["source"] }[] {
    const ws = resolve(this.opts.workspace());
    return [
      { root: ws, prefix: "skills", dir: join(ws, "skills"), source: "workspace" },
      { root: resolve(this.bundledDir), prefix: ".", dir: resolve(this.bundledDir), source: "bundled" },
    ];
  }

  /** SKILL.md through the door, or the reason the skill is skipped. */
  private readSkill(root: string, rel: string): { text: string } | { reason: string } | undefined {
    try {
      const f = readWorkspaceFileSync(root, rel, { maxBytes: MAX_SKILL_BYTES });
      return f ? { text: f.text } : undefined;
    } catch (err) {
      if (!isWorkspaceError(err)) throw err;
      reportRefusal(err, "skills");
      return { reason: `refused: ${err.message}` };
    }
  }

  /** Rescans both roots. Cheap: reads only SKILL.md files. */
  reload(): void {
    const next = new Map<string, SkillInfo>();
    const skipped: SkippedSkill[] = [];
    const disabled = new Set(this.opts.disabled());
    const pathVar = this.opts.path?.() ?? process.env.PATH ?? "";
    const env = this.opts.env?.() ?? process.env;
    for (const root of this.roots()) {
      let entries;
      try {
        entries = listWorkspaceDirSync(root.root, root.prefix);
      } catch (err) {
        if (!reportRefusal(err, "skills")) throw err;
        if (isWorkspaceError(err, "FILE_NOT_FOUND")) continue;
        skipped.push({ name: root.prefix, dir: root.dir, reason: (err as Error).message });
        continue;
      }
      for (const entry of entries) {
        const folder = entry.name;
        const dir = join(root.dir, folder);
        const file = join(dir, "SKILL.md");
        const rel = root.prefix === "." ? `${folder}/SKILL.md` : `${root.prefix}/${folder}/SKILL.md`;
        if (entry.kind === "link") {
          skipped.push({ name: folder, dir, reason: "the skill folder is a symbolic link (not followed)" });
          continue;
        }
        if (entry.kind !== "dir") continue;
        const read = this.readSkill(root.root, rel);
        if (!read) continue;
        if ("reason" in read) {
          skipped.push({ name: folder, dir, reason: read.reason });
          continue;
        }
        const text = read.text;
        let meta: Record<string, unknown>;
        try {
          meta = parseSkillFile(text).meta;
        } catch (err) {
          skipped.push({ name: folder, dir, reason: `invalid front matter: ${(err as Error).message}` });
          continue;
        }
        const name = typeof meta.name === "string" && meta.name.trim() ? meta.name.trim() : folder;
        const power = root.source === "workspace" ? POWER_KEYS.find((k) => k in meta) : undefined;
        if (power) {
          skipped.push({
            name,
            dir,
            reason: `${file}: front matter key "${power}" is refused: a workspace skill cannot grant tools, programs or settings (only config.yaml can)`,
          });
          continue;
        }
        // Shadowed by the workspace skill of the same name (a skipped workspace skill does not shadow).
        if (next.has(name)) continue;
        const description =
          typeof meta.description === "string" ? (meta.description.trim().split("\n")[0] ?? "") : "";
        if (disabled.has(name)) {
          skipped.push({ name, dir, reason: "disabled in skills.disabled" });
          continue;
        }
        const req = (meta.requires ?? {}) as Record<string, unknown>;
        const missingBins = strList(req.bins).filter((b) => !onPath(b, pathVar));
        const missingEnv = strList(req.env).filter((e) => !env[e]);
        if (missingBins.length || missingEnv.length) {
          const why = [
            missingBins.length ? `missing binaries: ${missingBins.join(", ")}` : "",
            missingEnv.length ? `missing environment variables: ${missingEnv.join(", ")}` : "",
          ]
            .filter(Boolean)
            .join("; ");
          skipped.push({ name, dir, reason: why });
          continue;
        }
        next.set(name, {
          name,
          description,
          dir,
          file,
          root: root.root,
          rel,
          source: root.source,
          always: meta.always === true,
        });
      }
    }
    for (const s of skipped) {
      if (this.logged.get(s.dir) === s.reason) continue;
      this.logged.set(s.dir, s.reason);
      this.opts.logger?.info({ skill: s.name, dir: s.dir }, `skill skipped: ${s.reason}`);
    }
    // A skill that loads again (or is gone) is forgotten, so skipping it later is logged again.
    const stillSkipped = new Set(skipped.map((s) => s.dir));
    for (const dir of [...this.logged.keys()]) if (!stillSkipped.has(dir)) this.logged.delete(dir);
    this.skills = next;
    this.skipped = skipped;
    this.alwaysCache.clear();
    for (const fn of this.listeners) fn();
  }

  list(): SkillInfo[] {
    // Code-unit order, not localeCompare: the first localeCompare of a process loads ICU's collation
    // (~11 ms and ~3 MB resident, measured) and the daemon lists skills at start (issue 38).
    return [...this.skills.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  listSkipped(): SkippedSkill[] {
    return [...this.skipped];
  }

  get(name: string): SkillInfo | undefined {
    return this.skills.get(name);
  }

  /** The skill's instructions (front matter stripped), read from disk now. */
  body(name: string): string | undefined {
    const s = this.skills.get(name);
    if (!s) return undefined;
    const read = this.readSkill(s.root, s.rel);
    if (!read || "reason" in read) return undefined;
    try {
      return parseSkillFile(read.text).body.trim();
    } catch {
      return undefined;
    }
  }

  /** Compact prompt section: names + descriptions, and the full text of `always` skills. */
  promptSection(): string | undefined {
    const list = this.list();
    if (list.length === 0) return undefined;
    const lines = ["## Skills", "Load a skill's instructions with the `skill` tool when a task matches it."];
    for (const s of list) if (!s.always) lines.push(`- ${s.name}: ${s.description}`);
    for (const s of list) {
      if (!s.always) continue;
      let body = this.alwaysCache.get(s.name);
      if (body === undefined) {
        body = this.body(s.name) ?? "";
        this.alwaysCache.set(s.name, body);
      }
      lines.push("", `### Skill: ${s.name}`, body);
    }
    return lines.join("\n");
  }

  /** Called after every rescan. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Starts hot reload (chokidar, imported lazily); changes are debounced. */
  async watch(debounceMs = 200): Promise<void> {
    if (this.watcher) return;
    const { watch } = await import("chokidar");
    // The workspace root is watched (not <workspace>/skills) so a skills folder created later is seen;
    // everything else in the workspace is ignored and never traversed.
    const ws = resolve(this.opts.workspace());
    const wsSkills = join(ws, "skills");
    const bundled = resolve(this.bundledDir);
    const w = watch([ws, bundled], {
      ignoreInitial: true,
      depth: 3,
      // A planted `skills/x -> /` must not make the watcher walk the host (the loader never follows it).
      followSymlinks: false,
      ignored: (p: string) =>
        !(
          p === ws ||
          p === wsSkills ||
          p.startsWith(wsSkills + sep) ||
          p === bundled ||
          p.startsWith(bundled + sep)
        ),
    });
    w.on("all", () => {
      if (this.debounce) clearTimeout(this.debounce);
      this.debounce = setTimeout(() => this.reload(), debounceMs);
      this.debounce.unref();
    });
    w.on("error", (err) => this.opts.logger?.warn({ err: (err as Error).message }, "skills watcher error"));
    this.watcher = w;
    await new Promise<void>((r) => w.once("ready", () => r()));
  }

  async close(): Promise<void> {
    if (this.debounce) clearTimeout(this.debounce);
    await this.watcher?.close();
    this.watcher = undefined;
  }
}
