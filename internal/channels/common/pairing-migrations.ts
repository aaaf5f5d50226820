import type { Migration } from "../../store/migrations.js";

/** Pairing (namespace `pairing`): pending codes and the approved allow list, per channel. */
export const pairingMigrations: readonly Migration[] = [
  {
    version: 1,
    description: "pairing requests and approved users",
    sql: `
CREATE TABLE pairing_requests (
  channel TEXT NOT NULL,
  code TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT,
  chat_id TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (channel, code)
);
CREATE UNIQUE INDEX pairing_requests_user ON pairing_requests(channel, user_id);
CREATE TABLE pairing_allowed (
  channel TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT,
  approved_at INTEGER NOT NULL,
  via_code TEXT,
  PRIMARY KEY (channel, user_id)
);
`,
  },
  {
    version: 2,
    description: "pairing: when an approved user was told they can talk to the assistant",
    // Users approved before this column existed were approved long ago: never greeted late.
    sql: `
ALTER TABLE pairing_allowed ADD COLUMN welcomed_at INTEGER;
UPDATE pairing_allowed SET welcomed_at = approved_at;
`,
  },
];
