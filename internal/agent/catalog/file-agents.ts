/**
 * Agents defined as one YAML file each in `<workspace>/agents/*.yaml`, hot-reloaded. An invalid file
 * is reported with its path and key while the others keep working; a name that clashes with
 * config.yaml is an error naming both places (config.yaml wins).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { z } from "zod";
import { agentSchema, type Config } from "../../config/schema.js";
import { issuesToProblems, formatProblem } from "../../config/errors.js";
import type { Logger } from "../../log/logger.js";
import { RESERVED_AGENT_KEYS, type AgentDef, type AgentSource } from "../agents.js";

export const AGENT_NAME_RE = /^[a-zA-Z0-9_-]+$/;

export const fileAgentSchema = agentSchema.extend({
  name: z.string().regex(AGENT_NAME_RE, { error: "expected a URL-safe name of letters, digits, _ or -" }),
});

export interface FileAgentError {
  path: string;
  message: string;
}

export class FileAgentSource implements AgentSource {
  private agents = new Map<string, AgentDef>();
  private errs: FileAgentError[] = [];
  private watcher: { close(): Promise<void> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private listeners = new Set<() => void>();

  constructor(
    private config: () => Config,
    private logger: Logger,
  ) {}

  dir(): string {
    return join(this.config().workspace, "agents");
  }

  list(): AgentDef[] {
    return [...this.agents.values()];
  }

  errors(): FileAgentError[] {
    return [...this.errs];
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** (Re)reads every file now. */
  load(): void {
    const dir = this.dir();
    const next = new Map<string, AgentDef>();
    const errs: FileAgentError[] = [];
    let files: string[] = [];
    try {
      files = readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort();
    } catch {
      files = [];
    }
    const cfg = this.config();
    for (const f of files) {
      const path = join(dir, f);
      let raw: unknown;
      try {
        raw = parse(readFileSync(path, "utf8"));
      } catch (err) {
        errs.push({ path, message: `YAML syntax error: ${(err as Error).message.split("\n")[0] ?? ""}` });
        continue;
      }
      const parsed = fileAgentSchema.safeParse(raw ?? {});
      if (!parsed.success) {
        for (const p of issuesToProblems(parsed.error.issues, raw))
          errs.push({ path, message: formatProblem(p) });
        continue;
      }
      const id = parsed.data.name;
      if (RESERVED_AGENT_KEYS.has(id)) {
        errs.push({ path, message: `name: "${id}" is reserved` });
        continue;
      }
      if ((cfg.agents as Record<string, unknown>)[id] !== undefined) {
        errs.push({
          path,
          message: `name: agent "${id}" is defined both in config.yaml (agents.${id}) and in ${path}; config.yaml wins`,
        });
        continue;
      }
      if (next.has(id)) {
        errs.push({
          path,
          message: `name: agent "${id}" is also defined in ${next.get(id)?.source.slice(5)}`,
        });
        continue;
      }
      next.set(id, { ...parsed.data, id, source: `file:${path}` });
    }
    for (const e of errs)
      if (!this.errs.some((o) => o.path === e.path && o.message === e.message))
        this.logger.error(e, `invalid agent file: ${e.message}`);
    this.agents = next;
    this.errs = errs;
    for (const fn of this.listeners) fn();
  }

  /** Watches the agents folder (lazy chokidar import); changes are debounced. */
  async watch(debounceMs = 200): Promise<void> {
    if (this.watcher) return;
    const { watch } = await import("chokidar");
    const w = watch(this.dir(), { ignoreInitial: true, depth: 0 });
    const kick = (): void => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => this.load(), debounceMs);
    };
    w.on("add", kick).on("change", kick).on("unlink", kick).on("addDir", kick);
    this.watcher = w;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.watcher?.close();
    this.watcher = undefined;
  }
}
