/**
 * One namespace of the core `kv` table (`<prefix><key>` -> value, with the time of the last write):
 * the small settings that must survive a restart (a chat's `/agent` choice, `/voice`, the owner's
 * last target, cron's main session). The statements are prepared once per namespace.
 */
import type { Db } from "./db.js";

export class KvNamespace {
  private readonly getStmt;
  private readonly putStmt;
  private readonly delStmt;

  constructor(
    db: Db,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.getStmt = db.prepare<[string], { value: string }>("SELECT value FROM kv WHERE key = ?");
    this.putStmt = db.prepare(
      "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    );
    this.delStmt = db.prepare("DELETE FROM kv WHERE key = ?");
  }

  get(key: string): string | undefined {
    return this.getStmt.get(this.prefix + key)?.value;
  }

  set(key: string, value: string): void {
    this.putStmt.run(this.prefix + key, value, this.now());
  }

  delete(key: string): void {
    this.delStmt.run(this.prefix + key);
  }
}
