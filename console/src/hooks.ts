/** Small hooks over the gateway: call a method or /api route, reload on events, follow the connection. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { gateway, type ConnState } from "./gateway";

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload(): void;
}

/** Runs `fn` now, whenever `deps` change and on `reload()`; keeps the last good data while reloading. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [n, setN] = useState(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    let live = true;
    setLoading(true);
    fnRef.current().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(undefined);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError((e as Error).message);
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  // After a reconnect (daemon restart, network blip) a view loads again instead of keeping an error.
  useEffect(() => {
    let lost = false;
    return gateway.on("$state", (st) => {
      if (st === "closed" || st === "unauthorized") lost = true;
      else if (st === "open" && lost) {
        lost = false;
        reload();
      }
    });
  }, [reload]);
  return { data, error, loading, reload };
}

/** Calls `fn` on each of the given gateway events. */
export function useEvents(events: string[], fn: (event: string, payload: unknown) => void): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const offs = events.map((e) => gateway.on(e, (p) => ref.current(e, p)));
    return () => offs.forEach((off) => off());
  }, [events.join(",")]);
}

const TURN_EDGES = new Set(["started", "final", "error", "aborted"]);

/** Reloads `l` when one of `events` arrives (debounced to one reload per 300 ms). */
export function useReloadOn(l: { reload(): void }, events: string[]): void {
  const timer = useRef<number | undefined>(undefined);
  useEvents(events, (event, payload) => {
    // Streaming deltas and tool progress change nothing a view lists; the end of a turn does.
    if (event === "chat" && !TURN_EDGES.has((payload as { state?: string } | null)?.state ?? "")) return;
    if (timer.current !== undefined) return;
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      l.reload();
    }, 300);
  });
}

/** The websocket's state. */
export function useConnState(): ConnState {
  const [s, setS] = useState<ConnState>(gateway.state);
  useEffect(() => gateway.on("$state", (v) => setS(v as ConnState)), []);
  return s;
}

/** The current hash route split into segments (`#/sessions/main/abc` -> ["sessions","main","abc"]). */
export function useRoute(): string[] {
  const parse = (): string[] =>
    location.hash
      .replace(/^#\/?/, "")
      .split("/")
      .filter(Boolean)
      .map((s) => decodeURIComponent(s));
  const [r, setR] = useState(parse);
  useEffect(() => {
    const on = (): void => setR(parse());
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return r;
}

/** Reloads `l` every `ms` while the view is open (for state no event announces, e.g. new approvals). */
export function usePoll(l: { reload(): void }, ms: number): void {
  useEffect(() => {
    const reload = l.reload;
    const t = window.setInterval(() => reload(), ms);
    return () => window.clearInterval(t);
  }, [l.reload, ms]);
}
