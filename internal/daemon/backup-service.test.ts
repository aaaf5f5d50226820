/**
 * Scheduled backups with retention on a fake clock: the first (overdue) backup a minute after start,
 * then one per `every`, only `keep` kept, the last one recorded for the console; a failure is
 * recorded, turns health degraded and tells the owner once.
 */
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { until } from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { ChannelRegistry } from "../channels/registry.js";
import { MemoryChannel } from "../channels/memory-channel.js";
import { readLastBackup } from "../store/last-backup.js";
import { createBackupService, type BackupService } from "./backup-service.js";

const HOUR = 3_600_000;
let core: TestCore | undefined;
let svc: BackupService | undefined;
afterEach(async () => {
  await svc?.stop();
  core?.close();
  svc = core = undefined;
});

describe("scheduled backups", () => {
  it("backs up every interval, keeps the newest, and records the last one", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    core = createTestCore({ backup: { enabled: true, every: "1h", keep: 2 } }, { clock });
    const c = core;
    mkdirSync(c.ctx.config().workspace, { recursive: true });
    writeFileSync(join(c.ctx.config().workspace, "MEMORY.md"), "# Memory\n");
    const registry = new ChannelRegistry();
    svc = createBackupService(c.ctx, { configFile: join(c.dir, "none.yaml"), outbox: registry });
    await svc.start();
    const dir = join(c.ctx.config().data_dir, "backups");
    const snaps = (): string[] => readdirSync(dir).filter((n) => n.startsWith("familiar-backup-"));
    const recorded = (n: number) => until(() => (readLastBackup(c.ctx.db)?.at ?? 0) >= n, "a backup");
    await clock.advance(61_000);
    await recorded(clock.now() - 2000);
    expect(snaps()).toHaveLength(1);
    for (let i = 0; i < 3; i++) {
      await clock.advance(HOUR);
      await recorded(clock.now() - 2000);
    }
    expect(snaps()).toHaveLength(2);
    expect(readLastBackup(c.ctx.db)).toMatchObject({ ok: true, trigger: "schedule" });
    expect(svc.health()).toMatchObject({ state: "ok" });
  });

  it("a failing backup is recorded, degrades health and tells the owner once", async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const blocker = join(tmpdir(), `familiar-not-a-dir-${process.pid}`);
    writeFileSync(blocker, "a file where the backup dir should be");
    core = createTestCore(
      { backup: { enabled: true, every: "1h", dir: join(blocker, "backups") } },
      { clock },
    );
    const c = core;
    const registry = new ChannelRegistry();
    const owner = new MemoryChannel("test");
    await owner.start();
    registry.add(owner);
    registry.setLastTarget("test:owner");
    svc = createBackupService(c.ctx, { configFile: join(c.dir, "none.yaml"), outbox: registry });
    await svc.start();
    await svc.runNow();
    await svc.runNow();
    expect(readLastBackup(c.ctx.db)).toMatchObject({ ok: false, error: expect.any(String) });
    expect(svc.health()).toMatchObject({ state: "degraded" });
    await until(() => owner.sent.length >= 1, "the owner told");
    expect(owner.sent).toHaveLength(1);
    expect(owner.sent[0]!.text).toMatch(/^The scheduled backup failed: /);
  });
});
