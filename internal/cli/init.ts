/**
 * `familiar init [DIR]`: writes the commented config.yaml (the template built into the program,
 * internal/config/config-template.yaml, never the checkout's own config.yaml with its edits and
 * secrets) and a copy of the workspace template
 * (prompt files, memory/, skills/README.md) into DIR, then seeds the default-on agent templates as
 * `workspace/agents/<id>.yaml`. Never overwrites: when any config or workspace file exists, nothing
 * is written and the existing files are listed; an agent file that exists is left as it is.
 *
 * In a git checkout the shipped `workspace/` is also the owner's live default workspace (memory
 * notes, edited SOUL.md), so the template is read from the last commit, never from the working
 * tree: a new home gets the pristine files and none of the owner's notes. An installed package
 * (no `.git`) is copied as it is.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { stringify } from "yaml";
import { AGENT_TEMPLATES, type AgentTemplate } from "../agent/catalog/templates.js";
import { packageRoot } from "../config/package-root.js";

/**
 * The commented config template, relative to the package root. The repository's config.yaml started
 * as a copy of it but is the owner's to edit, so it is never a source.
 */
export const DEFAULT_CONFIG_FILE = "internal/config/config-template.yaml";

/** One file init writes: where it comes from and where it goes. */
export interface InitFile {
  /** A file path, or `git:HEAD:<path>` for a committed file of a checkout. */
  from: string;
  to: string;
}

const GIT_PREFIX = "git:HEAD:";

/** The committed files under `workspace/` of a checkout at `root`, or undefined when it is none. */
function committedWorkspace(root: string): string[] | undefined {
  if (!existsSync(join(root, ".git"))) return undefined;
  try {
    const out = execFileSync("git", ["-C", root, "ls-tree", "-r", "--name-only", "HEAD", "--", "workspace"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const files = out.split("\n").filter((f) => f.startsWith("workspace/"));
    return files.length > 0 ? files.sort() : undefined;
  } catch {
    // No git binary, or not a repository after all: fall back to the files on disk.
    return undefined;
  }
}

/** The bytes of one planned file. */
function readSource(from: string, root: string): Buffer {
  if (!from.startsWith(GIT_PREFIX)) throw new Error(`not a committed file: ${from}`);
  return execFileSync("git", ["-C", root, "show", `HEAD:${from.slice(GIT_PREFIX.length)}`], {
    stdio: ["ignore", "pipe", "ignore"],
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** The files `init` would write into `dir`, from the package at `root`. */
export function initPlan(dir: string, root = packageRoot()): InitFile[] {
  const target = resolve(dir);
  const plan: InitFile[] = [{ from: join(root, DEFAULT_CONFIG_FILE), to: join(target, "config.yaml") }];
  const walk = (src: string, dst: string): void => {
    for (const name of readdirSync(src).sort()) {
      const s = join(src, name);
      const d = join(dst, name);
      if (statSync(s).isDirectory()) walk(s, d);
      else plan.push({ from: s, to: d });
    }
  };
  const committed = committedWorkspace(root);
  if (committed)
    for (const f of committed) plan.push({ from: `${GIT_PREFIX}${f}`, to: join(target, ...f.split("/")) });
  else walk(join(root, "workspace"), join(target, "workspace"));
  return plan;
}

export interface InitResult {
  written: string[];
  /** Files that already existed (nothing was written when non-empty). */
  existing: string[];
  /** Agent files seeded from the default-on templates (a subset of `written`). */
  agents: string[];
}

/** The YAML of an agent file made from a template (the file agent's `name` is the template id). */
export function templateAgentYaml(t: AgentTemplate): string {
  const def: Record<string, unknown> = {
    name: t.id,
    description: `${t.description} (${t.name})`,
    ...(t.temperature !== undefined ? { temperature: t.temperature } : {}),
    ...(t.tools ? { tools: t.tools } : {}),
    system_prompt: t.system_prompt,
  };
  return (
    `# Agent "${t.id}", seeded by \`familiar init\` from the template "${t.id}" (${t.name}).\n` +
    "# Edit freely: the daemon reloads this file live. Delete it to remove the agent.\n" +
    stringify(def, { lineWidth: 100 })
  );
}

/**
 * Writes `<workspace>/agents/<id>.yaml` for every default-on template that has no file yet. Idempotent:
 * an existing file (the user's edits) is never overwritten. Returns the files written.
 */
export function seedAgentTemplates(workspace: string): string[] {
  const dir = join(workspace, "agents");
  const written: string[] = [];
  for (const t of AGENT_TEMPLATES) {
    if (!t.defaultOn) continue;
    const file = join(dir, `${t.id}.yaml`);
    if (existsSync(file)) continue;
    mkdirSync(dir, { recursive: true });
    try {
      // "wx": a file that appeared since the check is still never overwritten.
      writeFileSync(file, templateAgentYaml(t), { flag: "wx" });
      written.push(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return written;
}

/** Writes the plan unless any target exists. */
export function initDir(dir: string, root = packageRoot()): InitResult {
  const plan = initPlan(dir, root);
  const existing = plan.filter((f) => existsSync(f.to)).map((f) => f.to);
  if (existing.length > 0) return { written: [], existing, agents: [] };
  for (const f of plan) {
    mkdirSync(dirname(f.to), { recursive: true });
    // COPYFILE_EXCL / "wx": a file that appeared since the check is still never overwritten.
    if (f.from.startsWith(GIT_PREFIX)) writeFileSync(f.to, readSource(f.from, root), { flag: "wx" });
    else copyFileSync(f.from, f.to, 1);
  }
  // config.yaml will hold the owner's settings (and often a key): the owner's alone (issue 43).
  const config = plan[0]?.to;
  if (config) chmodSync(config, 0o600);
  const agents = seedAgentTemplates(join(resolve(dir), "workspace"));
  return { written: [...plan.map((f) => f.to), ...agents], existing: [], agents };
}

/** CLI entry. Exit code 1 when files exist. */
export function initCommand(dirArg: string | undefined): void {
  const dir = resolve(dirArg ?? process.cwd());
  const shown = (p: string): string => {
    const rel = relative(process.cwd(), p);
    return rel === "" ? "." : rel.startsWith("..") ? p : rel;
  };
  let result: InitResult;
  try {
    result = initDir(dir);
  } catch (err) {
    process.stderr.write(`familiar init: cannot write into ${shown(dir)}: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  if (result.existing.length > 0) {
    const list = result.existing.map((f) => `  ${shown(f)}`).join("\n");
    process.stderr.write(
      `familiar init: refusing to overwrite existing files in ${shown(dir)} (nothing was written):\n${list}\n` +
        "Move them away or choose another directory.\n",
    );
    process.exitCode = 1;
    return;
  }
  const cfg = shown(join(dir, "config.yaml"));
  const files = result.written.length - result.agents.length;
  const agents = result.agents.length
    ? `Seeded agents: ${result.agents.map((f) => shown(f)).join(", ")}.\n`
    : "";
  process.stdout.write(
    `Wrote ${shown(join(dir, "config.yaml"))} and ${shown(join(dir, "workspace"))}/ (${files} files).\n` +
      agents +
      "Next:\n" +
      `  edit ${cfg}            (add a model provider; keep keys in .env beside it, mode 0600)\n` +
      `  familiar config check --config ${cfg}\n` +
      `  familiar run --config ${cfg}\n`,
  );
}
