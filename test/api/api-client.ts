/**
 * A tiny `/api` client for tests: JSON requests with the gateway token over real HTTP (Node's fetch),
 * and an SSE reader that collects `event:`/`data:` frames.
 */
export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  url: string;
  redirected: boolean;
}

export interface ApiClient {
  req<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>>;
  /** POSTs and reads the SSE stream to its end. */
  stream(path: string, body: unknown): Promise<{ status: number; events: SseEvent[]; headers: Headers }>;
  headers(): Record<string, string>;
}

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
  /** The frame's `id:`, when it has one. */
  id?: number;
}

/** Parses complete SSE frames out of `buf`; returns the events and the unparsed rest. */
export function parseSse(buf: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  const frames = buf.split("\n\n");
  const rest = frames.pop() ?? "";
  for (const f of frames) {
    let event = "message";
    let data = "";
    let id: number | undefined;
    for (const line of f.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
      else if (line.startsWith("id: ")) id = Number(line.slice(4));
    }
    events.push({
      event,
      data: data ? (JSON.parse(data) as Record<string, unknown>) : {},
      ...(id !== undefined ? { id } : {}),
    });
  }
  return { events, rest };
}

/**
 * Reads a response's SSE frames as they arrive. `until` may be called again to read on: a frame cut
 * between two reads is kept, not lost.
 */
export class SseReader {
  readonly events: SseEvent[] = [];
  private reader: ReadableStreamDefaultReader<Uint8Array>;
  private buf = "";
  private decoder = new TextDecoder();
  constructor(res: Response) {
    if (!res.body) throw new Error("the response has no body");
    this.reader = res.body.getReader();
  }

  /** Reads until `stop(events)` holds (true) or the stream ends (false). Default: to the end. */
  async until(stop: (events: SseEvent[]) => boolean = () => false): Promise<boolean> {
    for (;;) {
      if (stop(this.events)) return true;
      const { value, done } = await this.reader.read();
      if (done) return false;
      this.buf += this.decoder.decode(value, { stream: true });
      const parsed = parseSse(this.buf);
      this.buf = parsed.rest;
      this.events.push(...parsed.events);
    }
  }

  /** Stops reading (the connection is dropped). */
  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }
}

/** True once a token event arrived. */
export const sawToken = (events: SseEvent[]): boolean => events.some((e) => e.event === "token");

export function apiClient(base: string, token: string | undefined): ApiClient {
  const headers = (): Record<string, string> => ({
    "content-type": "application/json",
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  return {
    headers,
    async req<T>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>> {
      const res = await fetch(base + path, {
        method,
        headers: headers(),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return {
        status: res.status,
        headers: res.headers,
        body: (text ? JSON.parse(text) : {}) as T,
        url: res.url,
        redirected: res.redirected,
      };
    },
    async stream(path: string, body: unknown) {
      const res = await fetch(base + path, {
        method: "POST",
        headers: headers(),
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.headers.get("content-type")?.startsWith("text/event-stream"))
        return {
          status: res.status,
          events: [{ event: "http-error", data: JSON.parse(text) }],
          headers: res.headers,
        };
      return { status: res.status, events: parseSse(text).events, headers: res.headers };
    },
  };
}
