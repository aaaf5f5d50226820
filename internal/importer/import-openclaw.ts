/**
 * `familiar import openclaw`: plan everything first (what each item would do to this Familiar
 * instance), then, unless it is a dry run, apply it. Invariants:
 * - the OpenClaw directory is only read (openclaw-source.ts); nothing is ever written under it;
 * - nothing is written until the whole plan is made and the new config.yaml passes the real schema;
 * - config.yaml is edited through its YAML document (comments survive) and replaced atomically;
 * - no secret reaches config.yaml: secrets become `${VAR}` references (secrets.ts) listed in `env`;
 * - a second run updates: files by the manifest's hashes, cron jobs by id, sessions by id, pairing
 *   approvals by user; nothing is duplicated, and a file the owner edited since is kept.
 */
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { stringify } from "yaml";
import { parseConfigText } from "../config/load.js";
import { systemClock } from "../core/clock.js";
import { PairingStore } from "../channels/common/pairing.js";
import { allMigrations } from "../daemon/migrations.js";
import { importArchivedSession } from "../session/session-import.js";
import { openDatabase } from "../store/db.js";
import { applyEdit, plannedStatus } from "./config-doc.js";
import type { ConfigEdit, EnvVar, ImportItem, ImportResult, ItemStatus } from "./import-types.js";
import { mapChannels } from "./map-channels.js";
import { mapModels, modelChoice } from "./map-models.js";
import { mapCron, mapHeartbeat } from "./map-schedule.js";
import { obj, readOpenClaw } from "./openclaw-source.js";
import { planFiles } from "./plan-files.js";
import { fileStep, writeAtomic, type FileStep } from "./file-steps.js";
import { nextSteps } from "./import-report.js";
import { openTarget, placeholderEnv, readDbView, sha256 } from "./target.js";

export type { ImportResult } from "./import-types.js";

export interface ImportOptions {
  /** The OpenClaw state dir. */
  from: string;
  /** The Familiar config.yaml to import into (the CLI makes it as `familiar init` does when absent). */
  configFile: string;
  dryRun: boolean;
  /** Makes a new instance in this directory (`familiar init`) when config.yaml does not exist. */
  init?: (dir: string) => void;
}

/** The import could not be applied (nothing was written). */
export class ImportTargetError extends Error {
  readonly code = "IMPORT_TARGET";
  constructor(message: string) {
    super(message);
    this.name = "ImportTargetError";
  }
}

export function importOpenClaw(opts: ImportOptions): ImportResult {
  const src = readOpenClaw(opts.from);
  let t = openTarget(opts.configFile);
  if (!t.exists && !opts.dryRun) {
    // Only once the source proved readable: a wrong --from leaves no half-made instance behind.
    if (!opts.init)
      throw new ImportTargetError(`${t.configFile} does not exist: make it with \`familiar init\` first`);
    opts.init(dirname(t.configFile));
    t = openTarget(opts.configFile);
  }
  const items: ImportItem[] = [];
  const env: EnvVar[] = [];
  for (const p of src.problems) items.push({ area: "source", name: p, status: "cannot" });

  // Agents: OpenClaw's default agent is Familiar's default agent; the others keep their ids.
  const defaultOc = src.agents.find((a) => a.isDefault)?.id;
  const agentMap = (id: string): string | undefined =>
    id === defaultOc ? t.defaultAgent : src.agents.some((a) => a.id === id) ? id : undefined;

  const models = mapModels(src.config);
  const channels = mapChannels(src.config, src.pairing);
  const heartbeat = mapHeartbeat(src.config, models.refMap);
  const cron = mapCron(src.cronJobs, models.refMap, agentMap);
  const files = planFiles(src);
  env.push(...models.env, ...channels.env);

  // Files: workspace, notes, skills, further agents' prompt files.
  const steps: FileStep[] = [];
  for (const f of files.files) {
    const s = fileStep(t, f);
    steps.push(s);
    items.push({
      area: f.area,
      name: s.rel,
      status: s.status,
      ...(s.backup
        ? { detail: `yours kept as ${s.backup}` }
        : s.status === "kept"
          ? { detail: "you edited it since the last import" }
          : {}),
    });
  }
  const disable: string[] = [];
  for (const sk of files.skills) {
    const ss = sk.files.map((f) => fileStep(t, f));
    steps.push(...ss);
    const st: ItemStatus = ss.every((s) => s.status === "unchanged")
      ? "unchanged"
      : ss.every((s) => s.status === "new")
        ? "new"
        : "update";
    // A skill that runs code is disabled when it first arrives and again whenever its files change
    // (code the owner has not seen must not run); unchanged, it stays as the owner set it.
    const firstTime = !t.manifest.reviewed.includes(sk.name);
    const disableNow = sk.review !== undefined && st !== "unchanged";
    if (disableNow) disable.push(sk.name);
    items.push({
      area: "skills",
      name: sk.name,
      status: disableNow ? "review" : st,
      detail: sk.review
        ? `${sk.review}: ${
            !disableNow
              ? "unchanged, left as you set it"
              : firstTime
                ? "disabled until you review it"
                : "changed since the last import: disabled until you review it again"
          }`
        : `${sk.files.length} files`,
    });
  }
  for (const a of files.agents) {
    // The agent's own model, when OpenClaw set one and its provider maps.
    const own = modelChoice(obj(obj(obj(src.config.agents).entries)[a.id]).model).primary;
    const mapped = own ? models.refMap(own) : undefined;
    if (mapped) a.yaml.model = mapped;
    else if (own)
      items.push({
        area: "agents",
        name: `${a.id} model ${own}`,
        status: "cannot",
        detail: "its provider was not imported; the default model answers",
      });
  }
  const agentSteps = files.agents.map((a) => {
    const data = Buffer.from(
      `# Imported from OpenClaw agent "${a.id}" by \`familiar import openclaw\`.\n${stringify(a.yaml)}`,
    );
    return fileStep(t, { area: "agents", name: a.id, rel: a.rel, data });
  });
  for (const s of agentSteps) {
    steps.push(s);
    items.push({ area: "agents", name: s.write.name, status: s.status, detail: s.rel });
  }
  items.push(...files.items);

  // Config: models, channels, heartbeat, cron, skills under review.
  const planned = [...models.planned, ...channels.planned, ...heartbeat.planned, ...cron.planned];
  if (disable.length > 0)
    planned.push({
      item: { area: "skills", name: "skills.disabled", detail: disable.join(", ") },
      edits: [{ kind: "add", path: ["skills", "disabled"], values: disable }],
    });
  const edits: ConfigEdit[] = [];
  for (const p of planned) {
    items.push({ ...p.item, status: plannedStatus(t.doc, p) });
    edits.push(...p.edits);
  }
  items.push(...models.items, ...channels.items, ...heartbeat.items, ...cron.items);

  // Database: pairing approvals and conversations.
  const view = readDbView(t.dataDir);
  const approvals = channels.approvals.map((a) => ({ ...a, have: view.allowed(a.channel, a.userId) }));
  for (const a of approvals)
    items.push({
      area: "pairing",
      name: `${a.channel} user ${a.userId}`,
      status: a.have ? "unchanged" : "new",
      detail: "approved in OpenClaw",
    });
  const sessions = src.sessions
    .filter((s) => s.messages.length > 0)
    .map((s) => {
      const agentId = agentMap(s.agentId) ?? t.defaultAgent;
      const id = `openclaw-${s.agentId}-${s.id}`;
      const have = view.messageCount(id);
      const status: ItemStatus =
        have === undefined ? "new" : have >= s.messages.length ? "unchanged" : "update";
      return { s, agentId, id, status };
    });
  view.close();
  for (const x of sessions)
    items.push({
      area: "sessions",
      name: x.s.key,
      status: x.status,
      detail: `${x.s.messages.length} messages, archived`,
    });
  const empty = src.sessions.length - sessions.length;
  if (empty > 0)
    items.push({
      area: "sessions",
      name: `${empty} sessions`,
      status: "skip",
      detail: "no user or assistant text",
    });

  // The new config must pass the real schema before anything is written.
  for (const e of edits) applyEdit(t.doc, e);
  const configText = t.doc.toString({ lineWidth: 0 });
  try {
    parseConfigText(configText, t.configFile, placeholderEnv(configText));
  } catch (err) {
    throw new ImportTargetError(
      `the imported config would not be valid, nothing was written:\n${(err as Error).message}`,
    );
  }

  const result: ImportResult = {
    from: src.dir,
    version: src.version,
    configFile: t.configFile,
    dryRun: opts.dryRun,
    items,
    env: dedupe(env),
    nextSteps: [],
  };
  result.nextSteps = nextSteps(result, t);
  if (opts.dryRun) return result;

  for (const s of steps) {
    if (s.status === "unchanged" || s.status === "kept") continue;
    const abs = join(t.workspace, s.rel);
    if (s.backup && !existsSync(join(t.workspace, s.backup))) copyFileSync(abs, join(t.workspace, s.backup));
    writeAtomic(abs, s.write.data, s.write.mode);
    t.manifest.files[s.rel] = sha256(s.write.data);
  }
  if (configText !== readFileSync(t.configFile, "utf8")) writeAtomic(t.configFile, configText);
  const db = openDatabase(t.dataDir, { migrations: allMigrations });
  try {
    const pairing = new PairingStore(db, systemClock);
    for (const a of approvals) if (!a.have) pairing.allow(a.channel, a.userId);
    for (const x of sessions) {
      if (x.status === "unchanged") continue;
      importArchivedSession(
        db,
        {
          id: x.id,
          key: `agent:${x.agentId}:openclaw:${x.s.key.replace(/[:\s]+/g, "-")}`,
          agentId: x.agentId,
          createdAt: x.s.createdAt,
          updatedAt: x.s.messages.at(-1)?.at ?? x.s.updatedAt,
          origin: "openclaw-import",
        },
        x.s.messages.map((m) => ({ role: m.role, content: m.text, createdAt: m.at })),
      );
    }
  } finally {
    db.close();
  }
  t.manifest.reviewed = [
    ...new Set([...t.manifest.reviewed, ...files.skills.filter((s) => s.review).map((s) => s.name)]),
  ];
  writeAtomic(
    t.manifestFile,
    `${JSON.stringify({ ...t.manifest, source: src.dir, importedAt: Date.now() }, null, 2)}\n`,
    0o600,
  );
  return result;
}

function dedupe(env: EnvVar[]): EnvVar[] {
  const seen = new Map<string, EnvVar>();
  for (const e of env) if (!seen.has(e.name)) seen.set(e.name, e);
  return [...seen.values()];
}

/** `--into DIR` -> DIR/config.yaml; else the `--config` path. */
export function targetConfigFile(into: string | undefined, config: string): string {
  return into ? join(resolve(into), "config.yaml") : resolve(config);
}
