/**
 * Resumable `/api` turn streams. Every event of a stored-session turn's stream is recorded with its
 * sequential id, so a client that lost its connection can reconnect with `Last-Event-ID` and get the
 * rest of the turn: the recorded events after that id, then (while the turn runs) the live ones.
 *
 * Invariants:
 * - ids are 1, 2, ... per turn, the same on every connection; a frame is recorded before it is written
 *   anywhere, and replay plus attach happen in one synchronous step, so a reconnecting client sees
 *   every event after its `Last-Event-ID` exactly once;
 * - running turns are always kept; of finished ones only the newest `keepFinished` are (memory stays
 *   bounded; an older turn is read back through `GET .../messages`).
 */
import type { EventSink, SseWriter } from "./sse.js";

interface Frame {
  id: number;
  event: string;
  data: string;
}

/** One turn's recorded stream, written to by the turn and read by any number of connections. */
export class TurnStream implements EventSink {
  private frames: Frame[] = [];
  private readers = new Set<SseWriter>();
  private ended = false;

  constructor(
    readonly requestId: string,
    /** The session key the turn runs under (compaction successors share it). */
    readonly sessionKey: string,
    private onEnd: (s: TurnStream) => void,
  ) {}

  get finished(): boolean {
    return this.ended;
  }

  /** Id of the last recorded event (0 before the first). */
  get lastId(): number {
    return this.frames.length;
  }

  send(event: string, data: unknown): void {
    if (this.ended) return;
    const f = { id: this.frames.length + 1, event, data: JSON.stringify(data) };
    this.frames.push(f);
    for (const r of this.readers) r.frame(f.id, f.event, f.data);
  }

  /** Ends the turn's stream: every connection is closed after the terminal event. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const r of this.readers) r.end();
    this.readers.clear();
    this.onEnd(this);
  }

  /**
   * Writes the events after `lastEventId` to `w`, then keeps it attached for the live ones, or ends
   * it when the turn is over.
   */
  attach(w: SseWriter, lastEventId: number): void {
    for (const f of this.frames) if (f.id > lastEventId) w.frame(f.id, f.event, f.data);
    if (this.ended) {
      w.end();
      return;
    }
    this.readers.add(w);
    w.onClose(() => this.readers.delete(w));
  }
}

/** The recorded streams of one gateway, by request id. */
export class StreamRegistry {
  private streams = new Map<string, TurnStream>();
  private finishedOrder: string[] = [];

  constructor(private keepFinished = 32) {}

  /** Starts recording a turn's stream. */
  open(requestId: string, sessionKey: string): TurnStream {
    const s = new TurnStream(requestId, sessionKey, (done) => this.retire(done));
    this.streams.set(requestId, s);
    return s;
  }

  get(requestId: string): TurnStream | undefined {
    return this.streams.get(requestId);
  }

  /** The newest recorded stream of a session key (running or finished). */
  latest(sessionKey: string): TurnStream | undefined {
    let found: TurnStream | undefined;
    // Map iteration is insertion order, so the last match is the newest.
    for (const s of this.streams.values()) if (s.sessionKey === sessionKey) found = s;
    return found;
  }

  private retire(s: TurnStream): void {
    this.finishedOrder.push(s.requestId);
    while (this.finishedOrder.length > this.keepFinished) {
      const old = this.finishedOrder.shift();
      if (old !== undefined) this.streams.delete(old);
    }
  }
}
