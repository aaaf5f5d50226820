/**
 * Test helpers for the OpenClaw import: a private copy of the fixture taken from the real program
 * (test/fixtures/openclaw/state, see make-fixture.ts) with its endpoints pointed at live fakes, and a
 * hash of a whole directory tree (contents, modes, symlink targets) to prove the import never
 * changes the OpenClaw directory.
 */
import { createHash } from "node:crypto";
import {
  cpSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const FIXTURE = resolve(import.meta.dirname, "../fixtures/openclaw/state");

/** Copies the fixture into a temp dir; returns the copy's state dir. */
export function copyFixture(patch: { modelUrl?: string; telegramRoot?: string } = {}): string {
  const root = mkdtempSync(join(tmpdir(), "familiar-openclaw-"));
  const state = join(root, "openclaw");
  cpSync(FIXTURE, state, { recursive: true });
  const file = join(state, "openclaw.json");
  const cfg = JSON.parse(readFileSync(file, "utf8")) as {
    models: { providers: Record<string, { baseUrl: string }> };
    channels: { telegram: { apiRoot: string } };
  };
  if (patch.modelUrl) {
    const p = cfg.models.providers.fakeai;
    if (p) p.baseUrl = patch.modelUrl;
  }
  if (patch.telegramRoot) cfg.channels.telegram.apiRoot = patch.telegramRoot;
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  return state;
}

/** sha256 over every entry of a tree: path, type, mode, size, content or link target. */
export function hashTree(dir: string): string {
  const h = createHash("sha256");
  const walk = (rel: string): void => {
    const abs = join(dir, rel);
    for (const name of readdirSync(abs).sort()) {
      const p = join(rel, name);
      const st = lstatSync(join(dir, p));
      h.update(`${p}\0${st.mode}\0${st.size}\0${st.mtimeMs}\0`);
      if (st.isSymbolicLink()) h.update(readlinkSync(join(dir, p)));
      else if (st.isDirectory()) walk(p);
      else h.update(readFileSync(join(dir, p)));
    }
  };
  walk("");
  return h.digest("hex");
}

/** The parts of an imported config.yaml the tests read. */
export interface ImportedConfig {
  channels: { telegram: Record<string, unknown> };
  models: {
    providers: Record<string, { base_url: string; api_key?: string }>;
    primary?: string;
    fallbacks?: string[];
  };
  heartbeat: Record<string, unknown>;
  cron: { jobs: Record<string, unknown>[] };
  skills: { disabled: string[] };
}
