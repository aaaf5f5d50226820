/**
 * Which files an import writes into Familiar's workspace: the personality and rules files, the daily
 * notes, skills, and for each further OpenClaw agent its own files and an agent definition.
 *
 * - The default agent's files go to the workspace root (Familiar reads AGENTS.md, SOUL.md,
 *   IDENTITY.md, USER.md, TOOLS.md, MEMORY.md, HEARTBEAT.md there) and its notes to `memory/`.
 * - Another agent `<id>` keeps its files under `openclaw-agents/<id>/`, gets `agents/<id>.yaml` whose
 *   `prompt_file` is its personality files joined, and its notes go to `memory/<date>-<id>.md` (the
 *   memory index reads `memory/*.md` and dates a note by its leading date).
 * - A skill folder is copied whole; a skill that carries code (an executable file, a script by its
 *   extension, or `requires`/`install` in its front matter) is listed for review and disabled.
 *
 * - What the desk rules would hold (internal/workspace/desk-rules.ts: anything but plain data, such as
 *   `.envrc`, `.vscode/tasks.json`, a `.git` file, scripts) is planned with a `hold`: written only when
 *   the owner accepts its key. Instructions for other tools in a workspace root (`CLAUDE.md`,
 *   `GEMINI.md`...) are never written: Familiar's workspace root is read by the owner's editors too.
 * - An agent id that is not a safe file name (letters, digits, _ or -) is refused with one line and
 *   none of its files are planned: it would name paths outside the workspace.
 *
 * Reads go through SafeTree (no symlinks, caps); nothing is executed.
 */
import { AGENT_NAME_RE } from "../agent/catalog/file-agents.js";
import { parseSkillFile } from "../skills/skills-loader.js";
import type { OpenClawAgent, OpenClawSource } from "./openclaw-source.js";
import type { ImportArea, ImportItem } from "./import-types.js";
import type { SafeTree } from "./safe-tree.js";
import { CATEGORY_WHY, holdReason } from "../workspace/desk-rules.js";

/** Largest workspace Markdown file read. */
const MAX_MD_BYTES = 1024 * 1024;
/** Per skill: most files and bytes copied. */
const MAX_SKILL_FILES = 200;
const MAX_SKILL_BYTES = 8 * 1024 * 1024;

/** Workspace files Familiar reads, in prompt order (plus HEARTBEAT.md for heartbeats). */
export const PERSONALITY_FILES = [
  "AGENTS.md",
  "SOUL.md",
  "IDENTITY.md",
  "USER.md",
  "TOOLS.md",
  "MEMORY.md",
  "HEARTBEAT.md",
];
/** OpenClaw workspace files not imported, and why. */
const SKIPPED_FILES: Record<string, string> = {
  "BOOTSTRAP.md": "OpenClaw's first-run ritual; Familiar has none",
  "BOOT.md": "OpenClaw's gateway start checklist; Familiar has none",
};
const CODE_EXT =
  /\.(sh|bash|zsh|fish|py|js|mjs|cjs|ts|rb|pl|php|ps1|bat|cmd|exe|bin|so|dylib|jar|go|rs|lua)$/i;

export interface FileWrite {
  area: ImportArea;
  name: string;
  /** Workspace-relative target path (forward slashes). */
  rel: string;
  data: Buffer;
  mode?: number;
  /** For a memory note: write here instead when the target holds a different note of Familiar's own. */
  altRel?: string;
  /** The desk rules would hold this file: written only when the owner accepts `key`. */
  hold?: { key: string; why: string };
}

/** The hold for a file at `path` (its folder names included), by the desk rules; undefined for plain data. */
function holdOf(key: string, path: string, executable: boolean): FileWrite["hold"] {
  const c = holdReason({ rel: path, kind: "file", mode: executable ? 0o755 : 0o644 });
  return c ? { key, why: `${c}: ${CATEGORY_WHY[c]}` } : undefined;
}

export interface SkillPlan {
  name: string;
  files: FileWrite[];
  /** Why it needs review (it carries code), or undefined when it is instructions only. */
  review?: string;
}

export interface AgentPlan {
  id: string;
  /** Workspace-relative path of the agent file. */
  rel: string;
  yaml: Record<string, unknown>;
}

export interface FilesPlan {
  files: FileWrite[];
  skills: SkillPlan[];
  agents: AgentPlan[];
  items: ImportItem[];
}

function readInto(
  tree: SafeTree,
  rel: string,
  items: ImportItem[],
  area: ImportArea,
  max = MAX_MD_BYTES,
): Buffer | undefined {
  try {
    return tree.read(rel, max);
  } catch (err) {
    items.push({ area, name: rel, status: "cannot", detail: (err as Error).message });
    return undefined;
  }
}

function skillOf(tree: SafeTree, dir: string, name: string, items: ImportItem[]): SkillPlan | undefined {
  const files: FileWrite[] = [];
  const reasons: string[] = [];
  let bytes = 0;
  const walk = (rel: string, depth: number): void => {
    for (const e of tree.list(rel)) {
      const path = `${rel}/${e.name}`;
      const inSkill = path.slice(dir.length + 1);
      if (e.kind === "symlink") {
        reasons.push(`${inSkill} is a symlink (not copied)`);
        continue;
      }
      if (e.kind === "dir") {
        if (depth < 6 && e.name !== ".git" && e.name !== "node_modules") walk(path, depth + 1);
        else if (e.name === "node_modules") reasons.push("ships node_modules (not copied)");
        continue;
      }
      if (e.kind !== "file") continue;
      if (files.length >= MAX_SKILL_FILES || bytes + e.size > MAX_SKILL_BYTES) {
        reasons.push(`more than ${MAX_SKILL_FILES} files or ${MAX_SKILL_BYTES} bytes (the rest not copied)`);
        return;
      }
      const data = readInto(tree, path, items, "skills", MAX_SKILL_BYTES);
      if (!data) continue;
      bytes += data.length;
      if (e.executable || CODE_EXT.test(e.name)) reasons.push(`runs code (${inSkill})`);
      const hold = holdOf(`skill-file:${name}/${inSkill}`, `${name}/${inSkill}`, e.executable);
      files.push({
        area: "skills",
        name,
        rel: `skills/${name}/${inSkill}`,
        data,
        ...(e.executable ? { mode: 0o700 } : {}),
        ...(hold ? { hold } : {}),
      });
    }
  };
  walk(dir, 0);
  const skillMd = files.find((f) => f.rel === `skills/${name}/SKILL.md`);
  if (!skillMd) {
    items.push({ area: "skills", name, status: "skip", detail: "no SKILL.md" });
    return undefined;
  }
  const { meta } = parseSkillFile(skillMd.data.toString("utf8"));
  const oc = (meta.metadata as { openclaw?: Record<string, unknown> } | undefined)?.openclaw ?? {};
  if (meta.requires || oc.requires || oc.install || meta.install)
    reasons.push("declares required programs or an installer");
  const unique = [...new Set(reasons)];
  return { name, files, ...(unique.length > 0 ? { review: unique.join("; ") } : {}) };
}

function agentFiles(a: OpenClawAgent, tree: SafeTree, out: FilesPlan): void {
  if (!a.isDefault && !AGENT_NAME_RE.test(a.id)) {
    out.items.push({
      area: "agents",
      name: JSON.stringify(a.id),
      status: "cannot",
      detail: "not a safe agent name (letters, digits, _ or -): none of its files were imported",
    });
    return;
  }
  const base = a.isDefault ? "" : `openclaw-agents/${a.id}/`;
  const prompt: string[] = [];
  for (const e of tree.list("")) {
    if (e.kind === "symlink") {
      out.items.push({
        area: "workspace",
        name: `${base}${e.name}`,
        status: "cannot",
        detail: "a symlink (not followed)",
      });
      continue;
    }
    if (e.kind !== "file" || !e.name.endsWith(".md")) continue;
    const skip = SKIPPED_FILES[e.name];
    if (skip) {
      out.items.push({ area: "workspace", name: `${base}${e.name}`, status: "skip", detail: skip });
      continue;
    }
    const known = PERSONALITY_FILES.includes(e.name);
    const category = known ? undefined : holdReason({ rel: e.name, kind: "file", mode: 0o644 });
    if (category === "instructions") {
      out.items.push({
        area: "workspace",
        name: `${base}${e.name}`,
        status: "skip",
        detail: "instructions for another tool: never put in your workspace",
      });
      continue;
    }
    const data = readInto(tree, e.name, out.items, "workspace");
    if (!data) continue;
    if (!a.isDefault && known && e.name !== "MEMORY.md" && e.name !== "HEARTBEAT.md")
      prompt.push(`## ${e.name}\n${data.toString("utf8").trim()}`);
    const hold = known ? undefined : holdOf(`file:${base}${e.name}`, e.name, false);
    out.files.push({
      area: "workspace",
      name: `${base}${e.name}`,
      rel: `${base}${e.name}`,
      data,
      ...(hold ? { hold } : {}),
    });
  }
  for (const e of tree.list("memory")) {
    if (e.kind !== "file" || !e.name.endsWith(".md")) {
      if (e.kind === "symlink")
        out.items.push({
          area: "memory",
          name: `memory/${e.name}`,
          status: "cannot",
          detail: "a symlink (not followed)",
        });
      continue;
    }
    const data = readInto(tree, `memory/${e.name}`, out.items, "memory");
    if (!data) continue;
    const stem = e.name.replace(/\.md$/, "");
    const rel = a.isDefault ? `memory/${e.name}` : `memory/${stem}-${a.id}.md`;
    out.files.push({
      area: "memory",
      name: rel,
      rel,
      data,
      altRel: `memory/${stem}-openclaw${a.isDefault ? "" : `-${a.id}`}.md`,
    });
  }
  for (const e of tree.list("skills")) {
    if (e.kind === "dir") {
      const s = skillOf(tree, `skills/${e.name}`, e.name, out.items);
      if (s && !out.skills.some((x) => x.name === s.name)) out.skills.push(s);
    } else if (e.kind === "symlink")
      out.items.push({ area: "skills", name: e.name, status: "cannot", detail: "a symlink (not followed)" });
  }
  if (!a.isDefault) {
    const promptRel = `${base}PROMPT.md`;
    out.files.push({
      area: "agents",
      name: promptRel,
      rel: promptRel,
      // `{{name}}` is a template variable in a Familiar prompt file; OpenClaw's text is literal.
      data: Buffer.from(
        `${prompt.join("\n\n").replace(/\{\{(\s*[a-zA-Z_][a-zA-Z0-9_]*\s*)\}\}/g, "{ {$1} }")}\n`,
      ),
    });
    out.agents.push({
      id: a.id,
      rel: `agents/${a.id}.yaml`,
      yaml: { name: a.id, description: `imported from OpenClaw agent "${a.id}"`, prompt_file: promptRel },
    });
  }
}

export function planFiles(src: OpenClawSource): FilesPlan {
  const out: FilesPlan = { files: [], skills: [], agents: [], items: [] };
  for (const a of src.agents) {
    if (a.workspaceNote)
      out.items.push({
        area: "workspace",
        name: `agent ${a.id}`,
        status: a.workspace ? "note" : "cannot",
        detail: a.workspaceNote,
      });
    if (a.workspace) agentFiles(a, a.workspace, out);
  }
  // Skills shared by every agent (`<state>/skills/`); a workspace skill of the same name wins, as in OpenClaw.
  for (const e of src.tree.list("skills")) {
    if (e.kind !== "dir" || out.skills.some((s) => s.name === e.name)) continue;
    const s = skillOf(src.tree, `skills/${e.name}`, e.name, out.items);
    if (s) out.skills.push(s);
  }
  return out;
}
