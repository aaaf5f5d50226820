/**
 * The one writer of a turn's usage rows: through the daemon's UsageTracker (or one of its own when the
 * host is built alone), each row in one transaction with the model call's trace point, and with the
 * call's answer when there is one (see turn-recorder.ts, "Durability").
 */
import type { CoreContext } from "../runtime/context.js";
import type { UsageRecord } from "./host-types.js";
import type { TraceRecorder } from "./trace.js";
import { UsageTracker } from "./usage/usage-tracker.js";

/** A model call's trace point (kind "model", with its usage as meta). */
export type TracePoint = Parameters<TraceRecorder["point"]>[0];

/** Writes usage rows through the daemon's UsageTracker (or one of its own when built alone). */
export class UsageWriter {
  private recordUsage: (rec: UsageRecord) => void;
  private modelCallTx: ((rec: UsageRecord, point: TracePoint) => void) | undefined;
  private withAnswerTx: ((rec: UsageRecord, point: TracePoint, write: () => unknown) => unknown) | undefined;

  constructor(
    private ctx: CoreContext,
    private traces: TraceRecorder,
    recordUsage?: (rec: UsageRecord) => void,
  ) {
    // Without the daemon's tracker (a host built alone), rows go through a tracker of our own: one
    // writer of the usage table.
    if (recordUsage) this.recordUsage = recordUsage;
    else {
      const tracker = new UsageTracker({ db: ctx.db, config: () => ctx.config(), clock: ctx.clock });
      this.recordUsage = (rec) => void tracker.record(rec);
    }
  }

  /** Records a model call's usage and its trace point in one transaction. */
  recordModelCall(rec: UsageRecord, point: TracePoint): void {
    this.modelCallTx ??= this.ctx.db.transaction((r: UsageRecord, p: TracePoint) => {
      this.writeModelCall(r, p);
    });
    this.modelCallTx(rec, point);
  }

  /**
   * Records a model call's usage and trace point in the same transaction as `write` (the call's
   * answer), so the answer and what it cost are durable together: one commit, never one without the
   * other. When that transaction fails (disk full on the answer), the usage is still recorded on its
   * own before the error goes on: a paid call is never dropped with its answer.
   */
  recordModelCallWith<T>(rec: UsageRecord, point: TracePoint, write: () => T): T {
    this.withAnswerTx ??= this.ctx.db.transaction(
      (r: UsageRecord, p: TracePoint, w: () => unknown): unknown => {
        this.writeModelCall(r, p);
        return w();
      },
    );
    try {
      return this.withAnswerTx(rec, point, write) as T;
    } catch (err) {
      try {
        this.recordModelCall(rec, point);
      } catch (again) {
        this.ctx.logger.error({ err: (again as Error).message }, "failed to record usage");
      }
      throw err;
    }
  }

  private writeModelCall(rec: UsageRecord, point: TracePoint): void {
    this.record(rec);
    this.traces.point(point);
    // Trace rows written behind (the turn's start, earlier tool calls) ride on this commit.
    this.traces.flush();
  }

  private record(rec: UsageRecord): void {
    try {
      this.recordUsage(rec);
    } catch (err) {
      this.ctx.logger.error({ err: (err as Error).message }, "failed to record usage");
    }
  }
}
