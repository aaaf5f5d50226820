/**
 * What `/v1/responses` keeps (tables `v1_responses`, `v1_response_items`, `v1_response_heads`;
 * migrations in turn-idempotency-migrations.ts): each stored response's conversation (what the model
 * saw, then its answer), its output items (for `item_reference`), the session its turn ran in and
 * the turn's request id; and per session the latest response, which is the only one a follow-up may
 * continue the session from (openai-response-chain.ts). Rows from before sessions (no session key)
 * are still read: a follow-up from one forks a new session seeded with its conversation.
 */
import type { EphemeralEntry } from "../core/host.js";
import type { Db } from "../store/db.js";

type Obj = Record<string, unknown>;

/** A stored response. */
export interface StoredResponse {
  id: string;
  /** The agent that answered (null: the default agent at the time). */
  agentId: string | null;
  conversation: EphemeralEntry[];
  response: Obj;
  /** The session its turn ran in (null for responses stored before sessions). */
  sessionKey: string | null;
}

interface Row {
  id: string;
  agent_id: string | null;
  conversation: string;
  response: string;
  session_key: string | null;
}

const toStored = (r: Row): StoredResponse => ({
  id: r.id,
  agentId: r.agent_id,
  conversation: JSON.parse(r.conversation) as EphemeralEntry[],
  response: JSON.parse(r.response) as Obj,
  sessionKey: r.session_key,
});

/** See the module comment. One per database. */
export class ResponseStore {
  private st;
  private saveTx: (r: NewResponse, turn: ResponseTurn | undefined, now: number) => void;
  constructor(db: Db) {
    const cols = "id, agent_id, conversation, response, session_key";
    this.st = {
      get: db.prepare<[string], Row>(`SELECT ${cols} FROM v1_responses WHERE id = ?`),
      byRequest: db.prepare<[string], Row>(
        `SELECT ${cols} FROM v1_responses WHERE request_id = ? ORDER BY created_at LIMIT 1`,
      ),
      item: db.prepare<[string], { item: string }>("SELECT item FROM v1_response_items WHERE id = ?"),
      head: db.prepare<[string], { response_id: string; session_id: string }>(
        "SELECT response_id, session_id FROM v1_response_heads WHERE session_key = ?",
      ),
      put: db.prepare(
        `INSERT INTO v1_responses (id, agent_id, conversation, response, created_at, session_key, request_id)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      putItem: db.prepare(
        "INSERT OR REPLACE INTO v1_response_items (id, response_id, item) VALUES (?, ?, ?)",
      ),
      putHead: db.prepare(
        `INSERT INTO v1_response_heads (session_key, response_id, session_id) VALUES (?, ?, ?)
         ON CONFLICT(session_key) DO UPDATE SET response_id = excluded.response_id, session_id = excluded.session_id`,
      ),
    };
    this.saveTx = db.transaction((r: NewResponse, turn: ResponseTurn | undefined, now: number) => {
      this.st.put.run(
        r.id,
        r.agentId,
        JSON.stringify(r.conversation),
        JSON.stringify(r.response),
        now,
        turn?.sessionKey ?? null,
        turn?.requestId ?? null,
      );
      for (const it of r.response.output as Obj[])
        this.st.putItem.run(String(it.id), r.id, JSON.stringify(it));
      if (turn) this.st.putHead.run(turn.sessionKey, r.id, turn.sessionId);
    });
  }

  get(id: string): StoredResponse | undefined {
    const r = this.st.get.get(id);
    return r ? toStored(r) : undefined;
  }

  /** The response stored for a turn (an idempotent repeat answers with the same response). */
  byRequest(requestId: string): StoredResponse | undefined {
    const r = this.st.byRequest.get(requestId);
    return r ? toStored(r) : undefined;
  }

  item(id: string): Obj | undefined {
    const r = this.st.item.get(id);
    return r ? (JSON.parse(r.item) as Obj) : undefined;
  }

  /** The latest response of a session key and the session id its answer was stored in. */
  head(sessionKey: string): { responseId: string; sessionId: string } | undefined {
    const r = this.st.head.get(sessionKey);
    return r ? { responseId: r.response_id, sessionId: r.session_id } : undefined;
  }

  /** Stores a response, its items and (with a session) makes it the session's latest, in one commit. */
  save(r: NewResponse, turn: ResponseTurn | undefined, now: number): void {
    this.saveTx(r, turn, now);
  }
}

/** A response to store. */
export interface NewResponse {
  id: string;
  agentId: string | null;
  conversation: EphemeralEntry[];
  response: Obj;
}

/** Where a stored response's turn ran. */
export interface ResponseTurn {
  sessionKey: string;
  sessionId: string;
  requestId: string;
}

const stores = new WeakMap<Db, ResponseStore>();

/** The store of `db` (made on first use). */
export function responseStoreOf(db: Db): ResponseStore {
  let s = stores.get(db);
  if (!s) stores.set(db, (s = new ResponseStore(db)));
  return s;
}
