/**
 * `familiar doctor`'s reminders line: scheduled jobs whose last reply reached nobody (no chat to take
 * it, no `owner.preferred_channel`), read from the store the daemon writes (`cron_undelivered`).
 * Nothing to say on a fresh install: a data dir without a database is not opened (never created).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config/schema.js";

/** One doctor line (doctor.ts's CheckResult; not imported from there: doctor.ts imports this file). */
interface CheckResult {
  status: "ok" | "warn" | "fail";
  name: string;
  detail: string;
}

/** A warn line naming each job and where its reply is kept; undefined when every reply arrived. */
export async function checkUndeliveredReminders(cfg: Config): Promise<CheckResult | undefined> {
  if (!existsSync(join(cfg.data_dir, "familiar.db"))) return undefined;
  const [{ openDatabase }, { allMigrations }, { CronOrigins }] = await Promise.all([
    import("../store/db.js"),
    import("../daemon/migrations.js"),
    import("../cron/cron-origins.js"),
  ]);
  let held: string[];
  try {
    const db = openDatabase(cfg.data_dir, { migrations: allMigrations });
    try {
      held = new CronOrigins(db).undelivered().map((u) => u.jobId);
    } finally {
      db.close();
    }
  } catch (err) {
    return {
      status: "warn",
      name: "reminders",
      detail: `could not read the store: ${(err as Error).message}`,
    };
  }
  if (held.length === 0) return undefined;
  const fix = cfg.owner.preferred_channel
    ? "(owner.preferred_channel is set now: the next replies go there)"
    : "set owner.preferred_channel (telegram, discord or telegram:<chat id>) to receive them";
  return {
    status: "warn",
    name: "reminders",
    detail: `${held.length} job(s) whose last reply reached nobody, kept in ${held.map((id) => `familiar cron runs ${id}`).join(", ")}; ${fix}`,
  };
}
