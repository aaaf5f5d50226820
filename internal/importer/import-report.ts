/**
 * The import's report as text: item by item, grouped by area, then what cannot be imported, the
 * environment variables to set, and (after a real run) the next steps. The dry run and the real run
 * print the same items, so what the dry run promised is what the run does. What grants power and
 * was not accepted, and what the desk rules hold, is under a heading of its own, each with the key
 * `--accept` takes: it is the list the owner reads before saying yes.
 */
import { relative } from "node:path";
import type { ImportArea, ImportResult, ItemStatus } from "./import-types.js";
import type { Target } from "./target.js";

const AREAS: [ImportArea, string][] = [
  ["workspace", "Workspace files"],
  ["memory", "Memory notes"],
  ["skills", "Skills"],
  ["agents", "Agents"],
  ["models", "Models"],
  ["channels", "Channels"],
  ["pairing", "Pairing approvals"],
  ["heartbeat", "Heartbeat"],
  ["cron", "Cron jobs"],
  ["sessions", "Conversations"],
  ["settings", "Settings in openclaw.json"],
  ["source", "Reading OpenClaw"],
];

const MARK: Record<ItemStatus, string> = {
  new: "+",
  update: "~",
  unchanged: "=",
  kept: "=",
  review: "?",
  skip: "-",
  cannot: "!",
  note: "i",
  confirm: "?",
  held: "?",
};

function verb(s: ItemStatus, dry: boolean): string {
  const w: Record<ItemStatus, [string, string]> = {
    new: ["would add", "added"],
    update: ["would update", "updated"],
    unchanged: ["unchanged", "unchanged"],
    kept: ["yours kept", "yours kept"],
    review: ["needs review", "needs review"],
    skip: ["skipped", "skipped"],
    cannot: ["cannot import", "not imported"],
    note: ["note", "note"],
    confirm: ["needs your confirmation", "left out: needs your confirmation"],
    held: ["held", "held"],
  };
  return w[s][dry ? 0 : 1];
}

/** Statuses listed under their own heading, not under their area. */
const OWN_HEADING = new Set<ItemStatus>(["cannot", "confirm", "held"]);

export function formatReport(r: ImportResult): string {
  const lines: string[] = [];
  lines.push(
    `${r.dryRun ? "Dry run: nothing is written. " : ""}OpenClaw ${r.version ?? "(version unknown)"} at ${r.from} -> ${r.configFile}`,
  );
  for (const [area, title] of AREAS) {
    const its = r.items.filter((i) => i.area === area && !OWN_HEADING.has(i.status));
    if (its.length === 0) continue;
    lines.push("", `${title}:`);
    for (const i of its)
      lines.push(
        `  ${MARK[i.status]} ${i.name}: ${verb(i.status, r.dryRun)}${i.detail ? ` (${i.detail})` : ""}`,
      );
  }
  const ask = r.items.filter((i) => i.status === "confirm" || i.status === "held");
  if (ask.length > 0) {
    lines.push(
      "",
      "Needs your confirmation (left out; grants power or would be held on the desk):",
      ...ask.map((i) => `  ? [${i.key ?? "?"}] ${i.area}: ${i.name}${i.detail ? `: ${i.detail}` : ""}`),
      "  To take some: --accept KEY,KEY (a KEY ending in * takes all it starts); all: --accept-all-risky",
    );
  }
  const cannot = r.items.filter((i) => i.status === "cannot");
  if (cannot.length > 0) {
    lines.push("", "Cannot be imported:");
    for (const i of cannot) lines.push(`  ! ${i.area}: ${i.name}${i.detail ? `: ${i.detail}` : ""}`);
  }
  if (r.env.length > 0) {
    lines.push("", "Environment variables config.yaml now refers to (set them before starting Familiar):");
    for (const e of r.env) lines.push(`  ${e.name}  <- ${e.from}`);
  }
  const counts = new Map<ItemStatus, number>();
  for (const i of r.items) counts.set(i.status, (counts.get(i.status) ?? 0) + 1);
  lines.push("", `Summary: ${[...counts].map(([s, n]) => `${n} ${verb(s, r.dryRun)}`).join(", ")}.`);
  if (r.nextSteps.length > 0) {
    lines.push("", r.dryRun ? "After the import:" : "Next steps:");
    r.nextSteps.forEach((s, i) => lines.push(`  ${i + 1}. ${s}`));
  }
  return `${lines.join("\n")}\n`;
}

/** What the owner should do after the import, from what it found. */
export function nextSteps(r: ImportResult, t: Target): string[] {
  const rel = relative(process.cwd(), t.configFile);
  const cfg = rel && !rel.startsWith("..") ? rel : t.configFile;
  const steps: string[] = [];
  if (r.env.length > 0)
    steps.push(
      `Set ${r.env.map((e) => e.name).join(", ")} in the environment (under systemd: ~/.config/familiar/env, mode 600).`,
    );
  const review = r.items.filter((i) => i.area === "skills" && i.status === "review");
  if (review.length > 0)
    steps.push(
      `Review the skills that run code (${review.map((i) => i.name).join(", ")}) in ${t.workspace}/skills/, then remove them from skills.disabled to enable them.`,
    );
  if (r.items.some((i) => i.status === "confirm" || i.status === "held"))
    steps.push(
      'Read "Needs your confirmation" above; run the import again with --accept for the ones you trust.',
    );
  if (r.items.some((i) => i.status === "cannot"))
    steps.push(
      'Read the "Cannot be imported" lines above and set up those parts by hand (docs/import-openclaw.md).',
    );
  steps.push(`familiar config check --config ${cfg}`);
  if (r.items.some((i) => i.area === "channels" && i.status !== "cannot"))
    steps.push(
      "Stop the OpenClaw gateway before starting Familiar: one bot token cannot be polled by two programs.",
    );
  steps.push(`familiar run --config ${cfg}`);
  return steps;
}
