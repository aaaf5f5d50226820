/**
 * Agents created over the API, stored in SQLite with the same fields as file agents. Deleting one
 * cascades to its sessions and their messages.
 */
import type { Db } from "../../store/db.js";
import { agentSchema, type AgentConfig } from "../../config/schema.js";
import type { AgentDef, AgentSource } from "../agents.js";

interface Row {
  id: string;
  def: string;
  created_at: number;
  updated_at: number;
}

export class ApiAgentStore implements AgentSource {
  private cache: AgentDef[] | undefined;
  private listeners = new Set<() => void>();
  private s;
  constructor(
    private db: Db,
    private now: () => number = Date.now,
  ) {
    this.s = {
      all: db.prepare<[], Row>("SELECT * FROM api_agents ORDER BY created_at"),
      get: db.prepare<[string], Row>("SELECT * FROM api_agents WHERE id = ?"),
      insert: db.prepare("INSERT INTO api_agents (id, def, created_at, updated_at) VALUES (?, ?, ?, ?)"),
      update: db.prepare("UPDATE api_agents SET def = ?, updated_at = ? WHERE id = ?"),
      del: db.prepare("DELETE FROM api_agents WHERE id = ?"),
      delSessions: db.prepare("DELETE FROM sessions WHERE agent_id = ?"),
    };
  }

  /** Called after every create, update and delete (the daemon re-checks context windows). */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    this.cache = undefined;
    for (const fn of this.listeners) fn();
  }

  list(): AgentDef[] {
    if (!this.cache) this.cache = this.s.all.all().map((r) => this.toDef(r));
    return this.cache;
  }

  get(id: string): AgentDef | undefined {
    const r = this.s.get.get(id);
    return r ? this.toDef(r) : undefined;
  }

  /** Inserts; returns false when the id exists. */
  create(id: string, def: AgentConfig): boolean {
    if (this.s.get.get(id)) return false;
    const now = this.now();
    this.s.insert.run(id, JSON.stringify(def), now, now);
    this.changed();
    return true;
  }

  update(id: string, def: AgentConfig): boolean {
    const ok = this.s.update.run(JSON.stringify(def), this.now(), id).changes > 0;
    this.changed();
    return ok;
  }

  /** Deletes the agent, its sessions and their messages in one transaction. */
  delete(id: string): boolean {
    const run = this.db.transaction(() => {
      const gone = this.s.del.run(id).changes > 0;
      if (gone) this.s.delSessions.run(id);
      return gone;
    });
    const ok = run();
    this.changed();
    return ok;
  }

  private toDef(r: Row): AgentDef {
    const def = agentSchema.parse(JSON.parse(r.def));
    return { ...def, id: r.id, source: "api" };
  }
}
