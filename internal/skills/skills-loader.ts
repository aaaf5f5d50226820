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
 * - the prompt section lists names and one-line descriptions only, plus the full text of `always` skills.
 */
import { accessSync, constants, readdirSync, readFileSync, statSync } from "node:fs";
import { delimiter, join, resolve, sep } from "node:path";
import { parse as parseYaml } from "yaml";
import type { Logger } from "../log/logger.js";
import { packageRoot } from "../config/package-root.js";

export interface SkillInfo {
  name: string;
  description: string;
  /** Absolute folder of the skill. */
  dir: string;
  file: string;
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

function onPath(bin: string, pathVar: string): boolean {
  if (bin.includes("/")) {
    try {
      accessSync(bin, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }
  for (const d of pathVar.split(delimiter)) {
    if (!d) continue;
    try {
      accessSync(join(d, bin), constants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
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

  private roots(): { dir: string; source: SkillInfo["source"] }[] {
    return [
      { dir: join(resolve(this.opts.workspace()), "skills"), source: "workspace" },
      { dir: this.bundledDir, source: "bundled" },
    ];
  }

  /** Rescans both roots. Cheap: reads only SKILL.md files. */
  reload(): void {
    const next = new Map<string, SkillInfo>();
    const skipped: SkippedSkill[] = [];
    const disabled = new Set(this.opts.disabled());
    const pathVar = this.opts.path?.() ?? process.env.PATH ?? "";
    const env = this.opts.env?.() ?? process.env;
    for (const root of this.roots()) {
      let entries: string[];
      try {
        entries = readdirSync(root.dir).sort();
      } catch {
        continue;
      }
      for (const folder of entries) {
        const dir = join(root.dir, folder);
        const file = join(dir, "SKILL.md");
        let text: string;
        try {
          if (!statSync(dir).isDirectory()) continue;
          text = readFileSync(file, "utf8");
        } catch {
          continue;
        }
        let meta: Record<string, unknown>;
        try {
          meta = parseSkillFile(text).meta;
        } catch (err) {
          skipped.push({ name: folder, dir, reason: `invalid front matter: ${(err as Error).message}` });
          continue;
        }
        const name = typeof meta.name === "string" && meta.name.trim() ? meta.name.trim() : folder;
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
        next.set(name, { name, description, dir, file, source: root.source, always: meta.always === true });
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
    return [...this.skills.values()].sort((a, b) => a.name.localeCompare(b.name));
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
    try {
      return parseSkillFile(readFileSync(s.file, "utf8")).body.trim();
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
