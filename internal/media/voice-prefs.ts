/**
 * Per-chat voice replies (`/voice on|off`), kept in the core `kv` table under
 * `voice_reply:<channel>:<chat scope>` so the choice survives restarts. Off unless turned on.
 */
import type { Db } from "../store/db.js";

const PREFIX = "voice_reply:";

export class VoicePrefs {
  private get;
  private put;
  private del;

  constructor(
    db: Db,
    private now: () => number = Date.now,
  ) {
    this.get = db.prepare<[string], { value: string }>("SELECT value FROM kv WHERE key = ?");
    this.put = db.prepare(
      "INSERT INTO kv (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    );
    this.del = db.prepare("DELETE FROM kv WHERE key = ?");
  }

  /** True when the chat scope (`<channel>:<chatId>[:<threadId>]`) asked for spoken answers. */
  isOn(scope: string): boolean {
    return this.get.get(PREFIX + scope)?.value === "on";
  }

  set(scope: string, on: boolean): void {
    if (on) this.put.run(PREFIX + scope, "on", this.now());
    else this.del.run(PREFIX + scope);
  }
}
