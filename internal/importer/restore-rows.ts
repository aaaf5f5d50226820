/**
 * Which rows of a backup's database come back: every row that grants power is validated with the
 * validators the API and config.yaml use, and shown; what fails them is refused (never restored),
 * what passes is left out unless the owner accepts its key (consent.ts), as an import does.
 *
 * - `api_agents`: the agent schema and {@link apiAgentProblem} (no `prompt_file` outside the
 *   workspace, no CLI program), exactly what `POST /api/agents` accepts; each agent is asked;
 * - `cron_jobs`: the cron job schema (`parseJobInput`); each job is asked (it runs the model on a
 *   schedule, with what it reads, and may deliver anywhere);
 * - `pairing_allowed`: a known channel and a plain id; each approved sender is asked;
 * - `approval_grants` still in force: each grant is asked.
 * Everything else (sessions, messages, memory, usage) is data and comes back as it was.
 *
 * Invariant: {@link checkBackupRows} only reads (a `--check` writes nothing); {@link filterRestoredDb}
 * deletes, from the restored copy only, exactly the rows the check refused or the owner did not accept.
 */
import Database from "better-sqlite3";
import { apiAgentProblem } from "../agent/catalog/api-agent-check.js";
import { AGENT_NAME_RE } from "../agent/catalog/file-agents.js";
import { agentSchema } from "../config/schema.js";
import { parseJobInput } from "../cron/job.js";
import type { Consent } from "./consent.js";

/** One row that grants power: refused (with why), asked (left out), or accepted. */
export interface RowDecision {
  table: "api_agents" | "cron_jobs" | "pairing_allowed" | "approval_grants";
  /** The SQL that selects this row for deletion, with its parameters. */
  where: { sql: string; args: string[] };
  key: string;
  what: string;
  status: "refused" | "confirm" | "accepted";
  why: string;
}

type Row = Record<string, unknown>;

function rows(db: Database.Database, table: string, where = ""): Row[] {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
  return has ? (db.prepare(`SELECT * FROM ${table} ${where}`).all() as Row[]) : [];
}

const text = (v: unknown): string => (typeof v === "string" ? v : String(v));

function decide(
  consent: Consent,
  d: Omit<RowDecision, "status" | "why">,
  refused: string | undefined,
  asked: string,
): RowDecision {
  if (refused) return { ...d, status: "refused", why: refused };
  return { ...d, status: consent.accepts(d.key) ? "accepted" : "confirm", why: asked };
}

/** Every power-granting row of the database file `dbFile`, decided (read only). */
export function checkBackupRows(dbFile: string, consent: Consent): RowDecision[] {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  const out: RowDecision[] = [];
  try {
    for (const r of rows(db, "api_agents")) {
      const id = text(r.id);
      let problem: string | undefined;
      let engine = "model";
      try {
        const parsed = agentSchema.safeParse(JSON.parse(text(r.def)));
        if (!AGENT_NAME_RE.test(id)) problem = "its id is not a plain name (letters, digits, _ or -)";
        else if (!parsed.success)
          problem = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
        else {
          problem = apiAgentProblem(parsed.data)?.message;
          engine = parsed.data.engine;
        }
      } catch (err) {
        problem = `its definition is not JSON (${(err as Error).message})`;
      }
      out.push(
        decide(
          consent,
          {
            table: "api_agents",
            where: { sql: "id = ?", args: [id] },
            key: `agent:${id}`,
            what: `agent ${id} (engine ${engine})`,
          },
          problem && `the API would refuse it: ${problem}`,
          "an agent anyone with the gateway token can talk to",
        ),
      );
    }
    for (const r of rows(db, "cron_jobs")) {
      const id = text(r.id);
      let problem: string | undefined;
      let what = `cron job ${id}`;
      try {
        const job = parseJobInput(JSON.parse(text(r.spec)));
        if (job.id !== id) problem = `its spec names another id (${job.id})`;
        const when = job.cron ?? (job.every !== undefined ? `every ${job.every} ms` : `at ${job.at ?? "?"}`);
        what = `cron job ${id}: ${when}, deliver ${job.deliver}${job.enabled ? "" : ", disabled"}: "${job.message.slice(0, 60)}"`;
      } catch (err) {
        problem = (err as Error).message;
      }
      out.push(
        decide(
          consent,
          { table: "cron_jobs", where: { sql: "id = ?", args: [id] }, key: `cron:${id}`, what },
          problem,
          "runs the assistant on a schedule with what it reads, and may deliver anywhere",
        ),
      );
    }
    for (const r of rows(db, "pairing_allowed")) {
      const ch = text(r.channel);
      const user = text(r.user_id);
      out.push(
        decide(
          consent,
          {
            table: "pairing_allowed",
            where: { sql: "channel = ? AND user_id = ?", args: [ch, user] },
            key: `pairing:${ch}:${user}`,
            what: `approved sender ${ch} ${user}${r.user_name ? ` (${text(r.user_name)})` : ""}`,
          },
          ch !== "telegram" && ch !== "discord"
            ? `no ${ch} channel in Familiar`
            : /^-?\d+$/.test(user)
              ? undefined
              : "not a plain user id",
          "may talk to your assistant",
        ),
      );
    }
    for (const r of rows(db, "approval_grants", "WHERE revoked_at IS NULL")) {
      const id = text(r.id);
      out.push(
        decide(
          consent,
          {
            table: "approval_grants",
            where: { sql: "id = ?", args: [id] },
            key: `grant:${id}`,
            what: `grant ${id}: ${text(r.sink)} to ${text(r.target)} (${text(r.scope)})`,
          },
          undefined,
          "lets a session send to that target without asking you",
        ),
      );
    }
  } finally {
    db.close();
  }
  return out;
}

/** Deletes from the restored copy every row refused or not accepted; returns how many per table. */
export function filterRestoredDb(dbFile: string, decisions: RowDecision[]): Record<string, number> {
  const gone: Record<string, number> = {};
  const db = new Database(dbFile, { fileMustExist: true });
  try {
    db.transaction(() => {
      for (const d of decisions) {
        if (d.status === "accepted") continue;
        const n = db.prepare(`DELETE FROM ${d.table} WHERE ${d.where.sql}`).run(...d.where.args).changes;
        if (
          d.table === "cron_jobs" &&
          db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'cron_state'").get()
        )
          db.prepare("DELETE FROM cron_state WHERE job_id = ?").run(...d.where.args);
        gone[d.table] = (gone[d.table] ?? 0) + n;
      }
    })();
  } finally {
    db.close();
  }
  return gone;
}
