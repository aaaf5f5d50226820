/**
 * `familiar cron list|add|rm|run|runs`. list, add, rm and runs work on the SQLite store directly (the
 * running daemon notices runtime job changes within seconds through `PRAGMA data_version`); `run`
 * needs the daemon and goes through the gateway (`cron.run`).
 * Over 300 lines on purpose: five subcommands with their option parsing and table output.
 */
import { relativeAt } from "../config/schedule.js";
import type { Command } from "commander";
import type { Config } from "../config/schema.js";
import type { Db } from "../store/db.js";
import type { CronStore, CronRunRecord } from "../cron/cron-store.js";
import type { CronJobDef } from "../cron/job.js";
import { localTime } from "./cli-format.js";

/** Everything but the command definitions loads lazily: `familiar run` never pays for it. */
async function mods() {
  const [load, db, registry, store, job, schedule, origins] = await Promise.all([
    import("../config/load.js"),
    import("../store/db.js"),
    import("../daemon/migrations.js"),
    import("../cron/cron-store.js"),
    import("../cron/job.js"),
    import("../config/schedule.js"),
    import("../cron/cron-origins.js"),
  ]);
  return { ...load, ...db, ...registry, ...store, ...job, ...schedule, ...origins };
}

export interface CronCliOptions {
  config: string;
  json?: boolean;
}

/** One row of `familiar cron list`. */
export interface CronListRow {
  id: string;
  source: "config" | "runtime";
  schedule: string;
  enabled: boolean;
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastStatus: string | null;
  lastError: string | null;
  failures: number;
  deliver: string;
  message: string;
}

async function withStore<T>(
  configPath: string,
  fn: (store: CronStore, cfg: Config, m: Awaited<ReturnType<typeof mods>>, db: Db) => T,
): Promise<T> {
  const m = await mods();
  const cfg = m.loadConfigFile(configPath, process.env, { deferSecrets: true }).config;
  const db = m.openDatabase(cfg.data_dir, { migrations: m.allMigrations });
  try {
    return fn(new m.CronStore(db), cfg, m, db);
  } finally {
    db.close();
  }
}

/** Lists config and runtime jobs with their state (next run as the daemon would plan it). */
export function listJobs(configPath: string, now = Date.now()): Promise<CronListRow[]> {
  return withStore(configPath, (store, cfg, m) => {
    const rows: CronListRow[] = [];
    const configIds = new Set(cfg.cron.jobs.map((j) => j.id));
    const runtime = store.runtimeJobs();
    const add = (job: CronJobDef, source: CronListRow["source"]): void => {
      const st = store.state(job.id);
      let schedule = "invalid";
      let next: number | undefined;
      try {
        const s = m.jobSchedule(job, cfg.timezone);
        schedule = m.describeSchedule(s);
        next = cfg.cron.enabled ? m.plannedNext(job, s, st, now) : undefined;
      } catch {
        /* shown as invalid */
      }
      rows.push({
        id: job.id,
        source,
        schedule,
        enabled: job.enabled && st?.completedAt == null,
        nextRunAt: next ?? null,
        lastRunAt: st?.lastRunAt ?? null,
        lastStatus: st?.lastStatus ?? null,
        lastError: st?.lastError ?? null,
        failures: st?.failures ?? 0,
        deliver: job.deliver,
        message: job.message,
      });
    };
    for (const j of cfg.cron.jobs) add(j, "config");
    for (const j of runtime.jobs) if (!configIds.has(j.id)) add(j, "runtime");
    for (const bad of runtime.invalid)
      rows.push({
        id: bad.id,
        source: "runtime",
        schedule: "invalid",
        enabled: false,
        nextRunAt: null,
        lastRunAt: null,
        lastStatus: null,
        lastError: bad.error,
        failures: 0,
        deliver: "none",
        message: "",
      });
    return rows.sort((a, b) => a.id.localeCompare(b.id));
  });
}

/** Validates and stores a runtime job. Throws CronError. */
export function addJob(
  configPath: string,
  input: Record<string, unknown>,
  now = Date.now(),
): Promise<CronJobDef> {
  return withStore(configPath, (store, cfg, m, db) => {
    // `--at 2m`, `+2m`, "in 2 hours": fixed to an instant now (config/schedule.ts, relativeAt).
    const rel = typeof input.at === "string" ? relativeAt(input.at, now) : undefined;
    const job = m.parseJobInput(rel ? { ...input, at: rel } : input);
    if (cfg.cron.jobs.some((j) => j.id === job.id) || store.runtimeJob(job.id))
      throw new m.CronError("CRON_EXISTS", `a cron job "${job.id}" already exists`);
    const s = m.jobSchedule(job, cfg.timezone);
    if (s.kind === "at" && s.at <= now)
      throw new m.CronError("CRON_INVALID", `invalid cron job: at ${job.at} is in the past`);
    // Asked from a terminal: no chat to answer in, so `deliver: origin` takes the owner's preferred
    // channel (the job and its origin in one commit).
    db.transaction(() => {
      store.putRuntimeJob(job, now);
      new m.CronOrigins(db).put(job.id, { kind: "cli" }, now);
    })();
    return job;
  });
}

/** Removes a runtime job. Throws CronError for config or unknown jobs. */
export function removeJob(configPath: string, id: string): Promise<void> {
  return withStore(configPath, (store, cfg, m, db) => {
    if (cfg.cron.jobs.some((j) => j.id === id))
      throw new m.CronError("CRON_CONFIG_JOB", `cron job "${id}" is defined in config.yaml; remove it there`);
    if (!store.deleteRuntimeJob(id)) throw new m.CronError("CRON_NOT_FOUND", `no cron job "${id}"`);
    const origins = new m.CronOrigins(db);
    origins.delete(id);
    origins.clearUndelivered(id);
  });
}

/**
 * A job's recent runs. Throws CRON_NOT_FOUND for an id that is no job and has no runs (a typo must
 * not read as "no runs"); a removed job's history is still shown.
 */
export function jobRuns(configPath: string, id: string, limit = 20): Promise<CronRunRecord[]> {
  return withStore(configPath, (store, cfg, m) => {
    const runs = store.runs(id, limit);
    if (runs.length > 0 || cfg.cron.jobs.some((j) => j.id === id) || store.runtimeJob(id)) return runs;
    const known = [...cfg.cron.jobs.map((j) => j.id), ...store.runtimeJobs().jobs.map((j) => j.id)].sort();
    throw new m.CronError(
      "CRON_NOT_FOUND",
      `no cron job "${id}" (${known.length > 0 ? `jobs: ${known.join(", ")}` : "there are no cron jobs"}; see familiar cron list)`,
    );
  });
}

const when = (t: number | null): string => localTime(t);

export function formatList(rows: CronListRow[]): string {
  if (rows.length === 0) return "no cron jobs";
  return rows
    .map((r) => {
      const last = r.lastStatus ? `  last ${r.lastStatus} ${when(r.lastRunAt)}` : "";
      const err = r.lastError ? `\n    error: ${r.lastError}` : "";
      return `${r.id} [${r.source}${r.enabled ? "" : ", disabled"}] ${r.schedule}\n    next ${when(r.nextRunAt)}${last}  deliver ${r.deliver}: ${r.message.slice(0, 80)}${err}`;
    })
    .join("\n");
}

export function formatRuns(runs: CronRunRecord[]): string {
  if (runs.length === 0) return "no runs";
  return runs
    .map((r) => {
      const dur = r.endedAt !== null ? ` ${((r.endedAt - r.startedAt) / 1000).toFixed(1)}s` : "";
      const detail = r.error
        ? `  ${r.error}`
        : r.outputPreview
          ? `  ${r.outputPreview.replace(/\s+/g, " ").slice(0, 100)}`
          : "";
      // The run's one outcome: late runs say by how much, rows standing for several missed instants say so.
      const late = r.lateMs != null ? ` late ${Math.round(r.lateMs / 60_000)} min` : "";
      const covers = r.covers > 1 ? ` (${r.covers} instants)` : "";
      const resumed = r.resumeOf != null ? ` resumes #${r.resumeOf}` : "";
      return `#${r.id} ${when(r.startedAt)} ${r.trigger.padEnd(8)} ${r.status.padEnd(7)}${dur} ${r.tokens} tok${r.delivered ? " delivered" : ""}${late}${covers}${resumed}${detail}`;
    })
    .join("\n");
}

function fail(err: unknown): void {
  process.stderr.write(`familiar cron: ${(err as Error).message}\n`);
  process.exitCode = 1;
}

/** Registers `cron` and its subcommands on the program. */
export function registerCronCommands(program: Command, defaultConfig: string): void {
  const cron = program.command("cron").description("list, add, remove and run scheduled jobs");
  const cfgOpt = ["-c, --config <path>", "config file", defaultConfig] as const;

  cron
    .command("list")
    .description("list config and runtime jobs with next and last run")
    .option(...cfgOpt)
    .option("--json", "print JSON")
    .action(async (opts: CronCliOptions) => {
      try {
        const rows = await listJobs(opts.config);
        process.stdout.write((opts.json ? JSON.stringify(rows, null, 2) : formatList(rows)) + "\n");
      } catch (err) {
        fail(err);
      }
    });

  cron
    .command("add <id>")
    .description("add a runtime job (exactly one of --cron, --every, --at)")
    .requiredOption("-m, --message <text>", "what the agent is asked when the job runs")
    .option("--cron <expr>", 'cron expression, e.g. "0 9 * * 1-5" (6 fields = seconds first)')
    .option("--every <duration>", "interval, e.g. 30m, 2h")
    .option(
      "--at <when>",
      'one-shot time: 2026-03-29T09:00 (owner\'s time zone unless an offset is given), or from now: 2m, +2m, "in 2 hours"',
    )
    .option("--tz <zone>", "IANA time zone (default: config timezone)")
    .option(
      "--deliver <target>",
      'origin (owner.preferred_channel, else your last chat), a channel target, "last" or "none"',
      "origin",
    )
    .option("--session <kind>", "isolated or main", "isolated")
    .option("--agent <id>", "agent that runs the job")
    .option("--catch-up", "run once at start when a run was missed while the daemon was down")
    .option("--disabled", "add it disabled")
    .option(...cfgOpt)
    .action(async (id: string, o: Record<string, string | boolean | undefined> & { config: string }) => {
      try {
        const input: Record<string, unknown> = {
          id,
          message: o.message,
          deliver: o.deliver,
          session: o.session,
          catch_up: o.catchUp === true,
          enabled: o.disabled !== true,
        };
        for (const [k, v] of [
          ["cron", o.cron],
          ["every", o.every],
          ["at", o.at],
          ["timezone", o.tz],
          ["agent", o.agent],
        ] as const)
          if (v !== undefined) input[k] = v;
        const job = await addJob(o.config, input);
        process.stdout.write(`added ${job.id} (the running daemon picks it up within seconds)\n`);
      } catch (err) {
        fail(err);
      }
    });

  cron
    .command("rm <id>")
    .description("remove a runtime job")
    .option(...cfgOpt)
    .action(async (id: string, opts: CronCliOptions) => {
      try {
        await removeJob(opts.config, id);
        process.stdout.write(`removed ${id}\n`);
      } catch (err) {
        fail(err);
      }
    });

  cron
    .command("runs <id>")
    .description("show a job's recent runs")
    .option("-n, --limit <n>", "how many", "20")
    .option(...cfgOpt)
    .option("--json", "print JSON")
    .action(async (id: string, opts: CronCliOptions & { limit: string }) => {
      try {
        const runs = await jobRuns(opts.config, id, Math.max(1, Number(opts.limit) || 20));
        process.stdout.write((opts.json ? JSON.stringify(runs, null, 2) : formatRuns(runs)) + "\n");
      } catch (err) {
        fail(err);
      }
    });

  cron
    .command("run <id>")
    .description("run a job now in the running daemon and wait for the result")
    .option(...cfgOpt)
    .option("--url <url>", "gateway websocket URL (default from config)")
    .option("--token <token>", "gateway token (default from config)")
    .action(async (id: string, opts: { config: string; url?: string; token?: string }) => {
      const { connectAsOwner } = await import("./owner-client.js");
      let client: import("../gateway/client.js").GatewayClient | undefined;
      try {
        client = await connectAsOwner(opts, "familiar-cron");
        const res = await client.request<{ result: CronRunRecord | null }>("cron.run", { id });
        const r = res.result;
        process.stdout.write(r ? formatRuns([r]) + "\n" : `ran ${id}\n`);
        // Not delivered (no chat with the owner yet, or deliver none): the owner who ran it reads it here.
        if (r && !r.delivered && r.outputPreview)
          process.stdout.write(
            `\n${r.outputPreview}\n\n(not delivered${r.error ? "" : ": no chat to deliver to (see owner.preferred_channel), or deliver none"}; kept in \`familiar cron runs ${id} --json\`)\n`,
          );
        if (r && r.status !== "ok") process.exitCode = 1;
      } catch (err) {
        fail(err);
      } finally {
        await client?.close();
      }
    });
}
