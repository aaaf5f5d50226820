/**
 * Test helper: a MemoryIndex over a real SQLite file and workspace in a temp dir, embedding through
 * the fake `/v1/embeddings` server (test/fakes/embeddings-server.ts), with a fake clock and captured logs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pino } from "pino";
import { configFromObject } from "../../internal/config/load.js";
import type { Config } from "../../internal/config/schema.js";
import { FakeClock } from "../../internal/core/clock.js";
import { MemoryIndex } from "../../internal/memory/memory-index.js";
import { openDatabase, type Db } from "../../internal/store/db.js";
import { allMigrations } from "../../internal/daemon/migrations.js";
import { startFakeEmbeddings, type FakeEmbeddings } from "../fakes/embeddings-server.js";

export interface MemoryHarness {
  dir: string;
  workspace: string;
  db: Db;
  fake: FakeEmbeddings;
  clock: FakeClock;
  index: MemoryIndex;
  /** Log lines (parsed) at info and above. */
  logs: { level: number; msg: string }[];
  usage: { provider: string; model: string; tokens: number }[];
  config(): Config;
  setMemory(memory: Record<string, unknown>): void;
  write(rel: string, text: string): void;
  close(): Promise<void>;
}

export const NOW = Date.UTC(2026, 2, 10, 12, 0);

export async function createMemoryHarness(
  memory: Record<string, unknown> = { embeddings: { provider: "emb", model: "fake-small", batch_size: 8 } },
  extra: Record<string, unknown> = {},
  opts: { maxRetries?: number } = {},
): Promise<MemoryHarness> {
  const dir = mkdtempSync(join(tmpdir(), "familiar-memory-"));
  const workspace = join(dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  const fake = await startFakeEmbeddings({ modelDims: { "fake-large": 192 } });
  const build = (mem: Record<string, unknown>): Config =>
    configFromObject(
      {
        data_dir: join(dir, "data"),
        workspace,
        timezone: "UTC",
        models: { providers: { emb: { base_url: fake.baseUrl } }, max_retries: opts.maxRetries ?? 0 },
        memory: mem,
        ...extra,
      },
      dir,
    );
  let cfg = build(memory);
  const db = openDatabase(cfg.data_dir, { migrations: allMigrations });
  const clock = new FakeClock(NOW);
  const logs: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (s: string) => void logs.push(JSON.parse(s) as never) });
  const usage: MemoryHarness["usage"] = [];
  const index = new MemoryIndex(db, () => workspace, {
    config: () => cfg,
    logger,
    clock,
    onUsage: (provider, model, tokens) => usage.push({ provider, model, tokens }),
  });
  return {
    dir,
    workspace,
    db,
    fake,
    clock,
    index,
    logs,
    usage,
    config: () => cfg,
    setMemory(mem) {
      cfg = build(mem);
    },
    write(rel, text) {
      mkdirSync(dirname(join(workspace, rel)), { recursive: true });
      writeFileSync(join(workspace, rel), text);
    },
    async close() {
      await index.close();
      db.close();
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
