/**
 * Per-chat voice replies (`/voice on|off`), kept in the core `kv` table under
 * `voice_reply:<channel>:<chat scope>` so the choice survives restarts. Off unless turned on.
 */
import type { Db } from "../store/db.js";
import { KvNamespace } from "../store/kv.js";

export class VoicePrefs {
  private kv: KvNamespace;

  constructor(db: Db, now: () => number = Date.now) {
    this.kv = new KvNamespace(db, "voice_reply:", now);
  }

  /** True when the chat scope (`<channel>:<chatId>[:<threadId>]`) asked for spoken answers. */
  isOn(scope: string): boolean {
    return this.kv.get(scope) === "on";
  }

  set(scope: string, on: boolean): void {
    if (on) this.kv.set(scope, "on");
    else this.kv.delete(scope);
  }
}
