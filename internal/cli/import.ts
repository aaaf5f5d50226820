/**
 * `familiar import openclaw [--from DIR] [--into DIR] [--dry-run] [--accept KEY,...]
 * [--accept-all-risky]`: brings an OpenClaw assistant
 * (personality files, notes, skills, schedules, channels, models, conversations) into Familiar.
 * The work is in internal/importer/; this file picks the directories, makes the instance with
 * `familiar init`'s files when it does not exist yet (not on a dry run), and prints the report. At a
 * terminal, without `--accept` flags, it first asks the owner once about what needs their yes.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { relative } from "node:path";
import { ImportSourceError, defaultOpenClawDir } from "../importer/openclaw-source.js";
import { ImportTargetError, importOpenClaw, targetConfigFile } from "../importer/import-openclaw.js";
import { formatReport } from "../importer/import-report.js";
import { Consent } from "../importer/consent.js";
import { askConsent, canAsk, NOT_ASKED, type AskIO, type AskItem } from "../importer/ask-consent.js";
import type { ImportResult } from "../importer/import-types.js";
import { initDir } from "./init.js";

export interface ImportCommandOptions {
  from?: string;
  into?: string;
  config: string;
  dryRun?: boolean;
  /** Keys of what grants power (or is held) that the owner takes, comma-separated. */
  accept?: string | string[];
  /** Takes everything that would otherwise need confirmation. */
  acceptAllRisky?: boolean;
  /** The owner was asked at the terminal (`accept` holds their answer): no "not asked" line. */
  asked?: boolean;
  /** Output sinks (tests). */
  out?: (text: string) => void;
  err?: (text: string) => void;
  env?: NodeJS.ProcessEnv;
}

/** The import's questions: every item left out for want of the owner's yes. */
function asked(r: ImportResult): AskItem[] {
  return r.items
    .filter((i) => (i.status === "confirm" || i.status === "held") && i.key !== undefined)
    .map((i) => ({
      group: i.area,
      key: i.key ?? "",
      text: `${i.name}${i.detail ? `: ${i.detail}` : ""}`,
    }));
}

/**
 * {@link importOpenClawCommand}, asking the owner first when they sit at a terminal (ask-consent.ts):
 * a silent dry run finds what needs a yes, the owner answers once, and the import runs with it.
 */
export async function importOpenClawAsking(opts: ImportCommandOptions & { io?: AskIO }): Promise<number> {
  const io = opts.io ?? { input: process.stdin, output: process.stdout };
  const flags = opts.accept !== undefined || opts.acceptAllRisky === true;
  if (opts.dryRun === true || !canAsk(io, flags)) return importOpenClawCommand(opts);
  let questions: AskItem[] = [];
  try {
    const from = opts.from ?? defaultOpenClawDir(opts.env ?? process.env, homedir());
    const plan = importOpenClaw({
      from,
      configFile: targetConfigFile(opts.into, opts.config),
      dryRun: true,
      consent: new Consent(),
    });
    questions = asked(plan);
  } catch {
    // The real run says what is wrong, in its own words.
  }
  if (questions.length === 0) return importOpenClawCommand(opts);
  const keys = await askConsent(questions, io);
  return importOpenClawCommand({ ...opts, accept: keys, asked: true });
}

/** Runs the import; returns the exit code (0 done, 1 refused or failed: nothing written). */
export function importOpenClawCommand(opts: ImportCommandOptions): number {
  const out = opts.out ?? ((t: string) => process.stdout.write(t));
  const err = opts.err ?? ((t: string) => process.stderr.write(t));
  const env = opts.env ?? process.env;
  const from = opts.from ?? defaultOpenClawDir(env, homedir());
  // Where it looked and how to name another, not a raw ENOENT (issue 47).
  if (!existsSync(from)) {
    const how = opts.from
      ? "(--from)"
      : env.OPENCLAW_STATE_DIR?.trim()
        ? "($OPENCLAW_STATE_DIR)"
        : "(the default: $OPENCLAW_STATE_DIR is not set, so ~/.openclaw)";
    err(
      `familiar import openclaw: no OpenClaw state directory at ${from} ${how}; name it with --from DIR (the folder holding openclaw.json)\n`,
    );
    return 1;
  }
  const configFile = targetConfigFile(opts.into, opts.config);
  try {
    const init = (dir: string): void => {
      const made = initDir(dir);
      if (made.existing.length > 0)
        throw new ImportTargetError(
          `${configFile} does not exist and \`familiar init\` would overwrite ${made.existing
            .map((f) => relative(process.cwd(), f) || f)
            .join(
              ", ",
            )}; nothing was written. Pass --into a new directory or --config an existing config.yaml`,
        );
      out(`Made a new Familiar instance in ${dir} (as \`familiar init\` does).\n`);
    };
    const consent = Consent.fromFlags(opts.accept, opts.acceptAllRisky);
    const result = importOpenClaw({ from, configFile, dryRun: opts.dryRun === true, init, consent });
    out(formatReport(result));
    if (!opts.dryRun && opts.asked !== true && asked(result).length > 0) out(`${NOT_ASKED}\n`);
    return 0;
  } catch (e) {
    if (e instanceof ImportSourceError || e instanceof ImportTargetError) {
      err(`familiar import openclaw: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
