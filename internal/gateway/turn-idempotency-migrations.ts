import type { Migration } from "../store/migrations.js";

/**
 * Namespace `gateway`: `turn_idempotency`, one row per (scope, key) of a turn-starting POST on `/v1`
 * or `/api` (turn-idempotency.ts). `scope` is the door, the caller's token and the session; `key` is
 * the client's `Idempotency-Key` (`key:`) or, for an SDK retry without one, the request's fingerprint
 * (`sdk:`). Rows older than a day are ignored and pruned.
 * Version 2: `v1_responses` / `v1_response_items`, what `/v1/responses` keeps so `previous_response_id`
 * and `item_reference` find the conversation and items of an earlier response (openai-responses.ts).
 * Version 3: a stored response's session (`session_key`) and turn (`request_id`), and
 * `v1_response_heads`, the latest response of each session: a response chain is a Familiar session
 * (openai-response-chain.ts). Rows of version 2 keep a null session: a follow-up forks from them.
 */
export const gatewayMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "turn_idempotency",
    sql: `
CREATE TABLE turn_idempotency (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  session_key TEXT,
  run_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX turn_idempotency_created ON turn_idempotency(created_at);
`,
  },
  {
    version: 2,
    description:
      "v1_responses: the conversations behind /v1/responses ids (previous_response_id, item_reference)",
    sql: `
CREATE TABLE v1_responses (
  id TEXT PRIMARY KEY,
  agent_id TEXT,
  conversation TEXT NOT NULL,
  response TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE v1_response_items (
  id TEXT PRIMARY KEY,
  response_id TEXT NOT NULL REFERENCES v1_responses(id) ON DELETE CASCADE,
  item TEXT NOT NULL
);
CREATE INDEX v1_response_items_response ON v1_response_items(response_id);
`,
  },
  {
    version: 3,
    description: "v1_responses: the session and turn of each response; v1_response_heads",
    sql: `
ALTER TABLE v1_responses ADD COLUMN session_key TEXT;
ALTER TABLE v1_responses ADD COLUMN request_id TEXT;
CREATE INDEX v1_responses_request ON v1_responses(request_id);
CREATE TABLE v1_response_heads (
  session_key TEXT PRIMARY KEY,
  response_id TEXT NOT NULL,
  session_id TEXT NOT NULL
);
`,
  },
];
