/**
 * `familiar import openclaw`: plan everything first (what each item would do to this Familiar
 * instance), then, unless it is a dry run, apply it. Invariants:
 * - the OpenClaw directory is only read (openclaw-source.ts); nothing is ever written under it;
 * - nothing is written until the whole plan is made and the new config.yaml passes the real schema;
 * - config.yaml is edited through its YAML document (comments survive) and replaced atomically;
 * - no secret reaches config.yaml: secrets become `${VAR}` references (secrets.ts) listed in `env`;
 * - a second run updates: files by the manifest's hashes, cron jobs by id, sessions by id, pairing
 *   approvals by user; nothing is duplicated, and a file the owner edited since is kept;
 * - the workspace is read and written only through the daemon's door (file-steps.ts), and the target
 *   may not lie inside the OpenClaw directory, so nothing lands outside the workspace or in `--from`;
 * - what grants power (consent.ts) is listed as `confirm` and left out unless its key was accepted;
 *   a skill's file the desk rules would hold is `held` the same way; every setting of openclaw.json
 *   gets a line (map-settings.ts).
 *
 * Over 300 lines on purpose: the plan is one pass over the source in a fixed order (config, files,
 * jobs, pairing, sessions), each step a few lines calling its mapper; the mappers live apart.
 */
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { stringify } from "yaml";
import { parseConfigText } from "../config/load.js";
import { applyEdit, plannedStatus } from "./config-doc.js";
import { Consent } from "./consent.js";
import { applyImport } from "./import-apply.js";
import type { ConfigEdit, EnvVar, ImportItem, ImportResult, ItemStatus } from "./import-types.js";
import { mapChannels } from "./map-channels.js";
import { mapModels, modelChoice } from "./map-models.js";
import { mapCron, mapHeartbeat } from "./map-schedule.js";
import { mapSettings } from "./map-settings.js";
import { obj, readOpenClaw } from "./openclaw-source.js";
import { planFiles, type FileWrite } from "./plan-files.js";
import { fileStep, type FileStep } from "./file-steps.js";
import { nextSteps } from "./import-report.js";
import { openTarget, ownChat, placeholderEnv, readDbView } from "./target.js";
import { AGENT_NAME_RE } from "../agent/catalog/file-agents.js";

export type { ImportResult } from "./import-types.js";

export interface ImportOptions {
  /** The OpenClaw state dir. */
  from: string;
  /** The Familiar config.yaml to import into (the CLI makes it as `familiar init` does when absent). */
  configFile: string;
  dryRun: boolean;
  /** Makes a new instance in this directory (`familiar init`) when config.yaml does not exist. */
  init?: (dir: string) => void;
  /** What grants power and was accepted (`--accept`, `--accept-all-risky`); nothing when absent. */
  consent?: Consent;
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
  for (const p of [t.workspace, t.dataDir, dirname(t.configFile)]) {
    const r = relative(src.dir, resolve(p));
    if (r === "" || (!r.startsWith("..") && !isAbsolute(r)))
      throw new ImportTargetError(
        `${p} is inside the OpenClaw directory ${src.dir}, which an import never writes to; import into another directory`,
      );
  }
  const consent = opts.consent ?? new Consent();
  const items: ImportItem[] = [];
  const env: EnvVar[] = [];
  for (const p of src.problems) items.push({ area: "source", name: p, status: "cannot" });

  // Agents: OpenClaw's default agent is Familiar's default agent; the others keep their ids when
  // they are safe names (planFiles refuses the others) and the owner accepted them.
  const defaultOc = src.agents.find((a) => a.isDefault)?.id;
  const agentOk = (id: string): boolean => AGENT_NAME_RE.test(id) && consent.accepts(`agent:${id}`);
  const agentMap = (id: string): string | undefined =>
    id === defaultOc ? t.defaultAgent : src.agents.some((a) => a.id === id) && agentOk(id) ? id : undefined;

  // Whose chats are the owner's: allowed or paired in this Familiar, or accepted in this import.
  const view = readDbView(t.dataDir);
  const models = mapModels(src.config, consent);
  const channels = mapChannels(src.config, src.pairing, consent);
  const isOwner = (target: string): boolean => channels.known.has(target) || ownChat(t, view, target);

  const heartbeat = mapHeartbeat(src.config, models.refMap, consent, isOwner);
  const cron = mapCron(src.cronJobs, models.refMap, agentMap, consent, isOwner);
  const files = planFiles(src);
  env.push(...models.env, ...channels.env);

  // A file the desk rules would hold is written only when its key was accepted.
  const held = (f: FileWrite): boolean => {
    if (!f.hold || consent.accepts(f.hold.key)) return false;
    items.push({ area: f.area, name: f.rel, status: "held", key: f.hold.key, detail: f.hold.why });
    return true;
  };
  const stepItem = (s: FileStep): ImportItem => ({
    area: s.write.area,
    name: s.rel,
    status: s.status,
    ...(s.why
      ? { detail: s.why }
      : s.backup
        ? { detail: `yours kept as ${s.backup}` }
        : s.status === "kept"
          ? { detail: "you edited it since the last import" }
          : {}),
    ...(s.write.hold ? { key: s.write.hold.key } : {}),
  });

  // Further agents: a new agent speaks with the OpenClaw agent's prompt; asked, like any new power.
  const agents = files.agents.filter((a) => {
    const key = `agent:${a.id}`;
    if (consent.accepts(key)) return true;
    items.push({
      area: "agents",
      name: a.id,
      status: "confirm",
      key,
      detail: `a new agent with the prompt of OpenClaw agent "${a.id}" (${a.rel})`,
    });
    return false;
  });
  const agentIds = new Set(agents.map((a) => a.id));
  const left = new Set(
    files.agents.filter((a) => !agentIds.has(a.id)).map((a) => `openclaw-agents/${a.id}/PROMPT.md`),
  );

  // Files: workspace, notes, skills, further agents' prompt files.
  const steps: FileStep[] = [];
  for (const f of files.files) {
    if (left.has(f.rel) || held(f)) continue;
    const s = fileStep(t, f);
    steps.push(s);
    items.push(stepItem(s));
  }
  const disable: string[] = [];
  for (const sk of files.skills) {
    const ss = sk.files.filter((f) => !held(f)).map((f) => fileStep(t, f));
    for (const s of ss.filter((x) => x.status === "cannot")) items.push(stepItem(s));
    const ok = ss.filter((x) => x.status !== "cannot");
    steps.push(...ok);
    const st: ItemStatus = ok.every((s) => s.status === "unchanged")
      ? "unchanged"
      : ok.every((s) => s.status === "new")
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
        : `${ok.length} files`,
    });
  }
  for (const a of agents) {
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
  for (const a of agents) {
    const data = Buffer.from(
      `# Imported from OpenClaw agent "${a.id}" by \`familiar import openclaw\`.\n${stringify(a.yaml)}`,
    );
    const s = fileStep(t, { area: "agents", name: a.id, rel: a.rel, data });
    steps.push(s);
    items.push({ ...stepItem(s), name: a.id, key: `agent:${a.id}`, detail: s.why ?? a.rel });
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
  items.push(...mapSettings(src.config));

  // Database: pairing approvals (only the accepted ones reach here) and conversations.
  const approvals = channels.approvals.map((a) => ({ ...a, have: view.allowed(a.channel, a.userId) }));
  for (const a of approvals)
    items.push({
      area: "pairing",
      name: `${a.channel} user ${a.userId}`,
      status: a.have ? "unchanged" : "new",
      key: `pairing:${a.channel}:${a.userId}`,
      detail: `approved in OpenClaw${
        channels.owners.has(`${a.channel}:${a.userId}`)
          ? `; the owner's own: ${channels.owners.get(`${a.channel}:${a.userId}`) ?? ""}`
          : ""
      }`,
    });
  const sessions = src.sessions
    .filter((s) => s.messages.length > 0)
    .map((s) => {
      const agentId = agentMap(s.agentId) ?? t.defaultAgent;
      const id = `openclaw-${AGENT_NAME_RE.test(s.agentId) ? s.agentId : "agent"}-${s.id}`;
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
  for (const k of consent.unmatched())
    items.push({
      area: "source",
      name: `--accept ${k}`,
      status: "note",
      detail: "matched nothing in this import",
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
  applyImport(t, {
    steps,
    configText,
    approvals,
    sessions,
    reviewed: files.skills.filter((s) => s.review).map((s) => s.name),
    source: src.dir,
  });
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
