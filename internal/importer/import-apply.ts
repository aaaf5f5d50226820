/**
 * The write half of `familiar import openclaw`: runs only after the whole plan is made, the new
 * config.yaml passed the real schema and (for a dry run) never. Workspace files go through the
 * daemon's door (file-steps.ts: no link followed at any step); config.yaml and the manifest live
 * beside the data dir, outside what the sandbox can write, and are replaced atomically.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { systemClock } from "../core/clock.js";
import { PairingStore } from "../channels/common/pairing.js";
import { allMigrations } from "../daemon/migrations.js";
import { importArchivedSession } from "../session/session-import.js";
import { openDatabase } from "../store/db.js";
import { applyFileStep, writeAtomic, type FileStep } from "./file-steps.js";
import type { OpenClawSession } from "./openclaw-db.js";
import type { ItemStatus } from "./import-types.js";
import { sha256, type Target } from "./target.js";

/** Everything the plan decided to write. */
export interface ImportWrites {
  steps: FileStep[];
  configText: string;
  approvals: { channel: "telegram" | "discord"; userId: string; have: boolean }[];
  sessions: { s: OpenClawSession; agentId: string; id: string; status: ItemStatus }[];
  /** Skills disabled for review by this run (recorded so a later run does not disable them again). */
  reviewed: string[];
  source: string;
}

export function applyImport(t: Target, w: ImportWrites): void {
  // The workspace root is the owner's choice (config.yaml); everything below it goes through the door.
  mkdirSync(t.workspace, { recursive: true, mode: 0o700 });
  for (const s of w.steps) {
    if (s.status !== "new" && s.status !== "update") continue;
    applyFileStep(t.workspace, s);
    t.manifest.files[s.rel] = sha256(s.write.data);
  }
  if (w.configText !== readFileSync(t.configFile, "utf8")) writeAtomic(t.configFile, w.configText);
  const db = openDatabase(t.dataDir, { migrations: allMigrations });
  try {
    const pairing = new PairingStore(db, systemClock);
    for (const a of w.approvals) if (!a.have) pairing.allow(a.channel, a.userId);
    for (const x of w.sessions) {
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
  t.manifest.reviewed = [...new Set([...t.manifest.reviewed, ...w.reviewed])];
  writeAtomic(
    t.manifestFile,
    `${JSON.stringify({ ...t.manifest, source: w.source, importedAt: Date.now() }, null, 2)}\n`,
    0o600,
  );
}
