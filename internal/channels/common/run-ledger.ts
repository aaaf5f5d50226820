/**
 * What the chat ledgers (previews, deliveries) share: rows carry the id of the process run that wrote
 * them, so a run tells its own rows from the leftovers of an earlier one (a kill -9).
 */

/** A ledger of one channel whose rows are stamped with the writing run. */
export abstract class RunLedger {
  /**
   * Identifies this process run's rows: the same for every ledger of the run (so a channel rebuilt
   * by a hot reload does not take its predecessor's open rows for leftovers), new after a restart.
   */
  readonly boot: string;
  /** When this process started (ctx.startedAt): what was stored before it belongs to an earlier run. */
  protected readonly bootAt: number;

  constructor(
    readonly channel: string,
    protected now: () => number,
    bootAt?: number,
  ) {
    this.bootAt = bootAt ?? now();
    this.boot = `${process.pid}-${this.bootAt}`;
  }
}
