/**
 * The Familiar instance an import writes into: its config.yaml as a YAML document, the workspace and
 * data dir it names, the import manifest, and read access to its database for a dry run.
 *
 * The manifest (`<data_dir>/openclaw-import.json`) records the hash of every file the import wrote,
 * the skills it disabled for review, and when it ran. A second import uses it to tell "the owner
 * edited this since" (kept) from "we wrote this and OpenClaw changed" (updated).
 */
import Database from "better-sqlite3";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseDocument, type Document } from "yaml";
import { loadConfigFile } from "../config/load.js";
import { packageRoot } from "../config/package-root.js";

export interface Manifest {
  version: 1;
  source?: string;
  importedAt?: number;
  /** Workspace-relative path -> sha256 of what the import wrote there. */
  files: Record<string, string>;
  /** Skills disabled for review by an import (never disabled again once the owner enables them). */
  reviewed: string[];
}

export interface Target {
  configFile: string;
  /** False when config.yaml does not exist yet (a dry run then plans against the shipped defaults). */
  exists: boolean;
  doc: Document;
  workspace: string;
  dataDir: string;
  manifestFile: string;
  manifest: Manifest;
  /** The default agent's id (`agents.default`). */
  defaultAgent: string;
}

export const sha256 = (b: Buffer | string): string => createHash("sha256").update(b).digest("hex");

/**
 * The environment with a placeholder for every `${VAR}` the config text names and the environment
 * lacks: the import only reads paths from the config and checks its shape, and the variables it
 * introduces are set by the owner afterwards.
 */
export function placeholderEnv(text: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}/g))
    if (m[1] && env[m[1]] === undefined) env[m[1]] = "placeholder-for-import";
  return env;
}

/** Opens the target described by `configFile` (it may not exist yet). */
export function openTarget(configFile: string): Target {
  const file = resolve(configFile);
  const exists = existsSync(file);
  const text = readFileSync(
    exists ? file : join(packageRoot(), "internal", "config", "config-template.yaml"),
    "utf8",
  );
  const doc = parseDocument(text);
  const base = dirname(file);
  let workspace: string;
  let dataDir: string;
  let defaultAgent = "main";
  try {
    if (!exists) throw new Error("no config yet");
    const { config } = loadConfigFile(file, placeholderEnv(text));
    workspace = config.workspace;
    dataDir = config.data_dir;
    defaultAgent = config.agents.default;
  } catch {
    // An invalid or missing config: read the two paths as written (relative to the config's dir).
    const raw = (doc.toJS() ?? {}) as {
      workspace?: unknown;
      data_dir?: unknown;
      agents?: { default?: unknown };
    };
    const abs = (p: unknown, d: string): string => {
      const s = typeof p === "string" && p !== "" ? p : d;
      return isAbsolute(s) ? s : resolve(base, s);
    };
    workspace = abs(raw.workspace, "./workspace");
    dataDir = abs(raw.data_dir, "./data");
    if (typeof raw.agents?.default === "string") defaultAgent = raw.agents.default;
  }
  const manifestFile = join(dataDir, "openclaw-import.json");
  let manifest: Manifest = { version: 1, files: {}, reviewed: [] };
  try {
    const m = JSON.parse(readFileSync(manifestFile, "utf8")) as Partial<Manifest>;
    manifest = { version: 1, ...m, files: m.files ?? {}, reviewed: m.reviewed ?? [] };
  } catch {
    /* first import */
  }
  return { configFile: file, exists, doc, workspace, dataDir, manifestFile, manifest, defaultAgent };
}

/** What the database already holds, read without writing (a dry run must not create it). */
export interface DbView {
  allowed(channel: string, userId: string): boolean;
  messageCount(sessionId: string): number | undefined;
  close(): void;
}

export function readDbView(dataDir: string): DbView {
  const file = join(dataDir, "familiar.db");
  let db: Database.Database | undefined;
  try {
    if (existsSync(file)) db = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    db = undefined;
  }
  const q = <T>(sql: string, ...args: unknown[]): T | undefined => {
    try {
      return db?.prepare(sql).get(...args) as T | undefined;
    } catch {
      return undefined; // a table of a feature not migrated yet
    }
  };
  return {
    allowed: (channel, userId) =>
      q<{ n: number }>(
        "SELECT 1 AS n FROM pairing_allowed WHERE channel = ? AND user_id = ?",
        channel,
        userId,
      ) !== undefined,
    messageCount: (id) => {
      if (!q("SELECT 1 AS n FROM sessions WHERE id = ?", id)) return undefined;
      return q<{ n: number }>("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", id)?.n ?? 0;
    },
    close: () => db?.close(),
  };
}

/**
 * True when `<channel>:<id>` is already one of the owner's chats in this instance: in the channel's
 * `allow_from` in config.yaml or approved in its pairing store.
 */
export function ownChat(t: Target, view: DbView, target: string): boolean {
  const i = target.indexOf(":");
  const ch = target.slice(0, i);
  const id = target.slice(i + 1);
  const node = t.doc.getIn(["channels", ch, "allow_from"]);
  const list: unknown =
    node && typeof node === "object" && "toJSON" in node ? (node as { toJSON(): unknown }).toJSON() : node;
  return view.allowed(ch, id) || (Array.isArray(list) && list.map(String).includes(id));
}
