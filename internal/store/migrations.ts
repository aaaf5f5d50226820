/**
 * Numbered migrations. Each module owns a list of migrations under its own namespace
 * (`core`, `telegram`, `cron`, ...), numbered from 1; ids are `<namespace>:<number>`.
 * Invariant: a migration, once released, is never edited; add a new number instead.
 */
export interface Migration {
  /** Namespace-local number, starting at 1, strictly increasing. */
  version: number;
  description: string;
  sql: string;
}

/** All migration sets, keyed by namespace. The daemon gathers them in `daemon/migrations.ts`. */
export type MigrationSets = Record<string, readonly Migration[]>;
