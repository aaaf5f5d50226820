/** Shared bits of the console's views: formatting, cards, errors, buttons that report their outcome. */
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";

/**
 * The one money format (internal/core/money.ts): `$0.15`, `$0.0031`; `≈$0.15` when the figure counts
 * calls of a model without a price at budgets.default_price (an estimate; the reason goes in a title).
 */
export const fmtCost = (usd: number, estimated = false): string => {
  const abs = Math.abs(usd);
  const digits = abs === 0 || abs >= 0.01 ? 2 : Math.min(8, Math.max(4, Math.ceil(-Math.log10(abs)) + 1));
  return `${estimated ? "≈" : ""}$${usd.toFixed(digits)}`;
};
/** The hover text beside an estimate: how many calls and at what price. */
export const estimateTitle = (calls: number, price?: { input: number; output: number }): string =>
  `≈: ${calls} call(s) to a model without a price in models.pricing, counted at budgets.default_price` +
  (price ? ` ($${price.input} input / $${price.output} output per 1M tokens)` : "");
export const fmtInt = (n: number): string => Math.round(n).toLocaleString("en-US");
export const fmtTime = (ms: number | null | undefined): string =>
  ms
    ? new Date(ms).toLocaleString(undefined, {
        year: "numeric",
        month: "short",
        day: "numeric",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      })
    : "—";
/** A no-break space: a figure and its unit ("39.1 MiB", "4 s ago") never part at a line end. */
const NB = "\u00a0";
export const fmtDur = (ms: number | null | undefined): string =>
  ms == null
    ? "—"
    : ms < 1000
      ? `${Math.round(ms)}${NB}ms`
      : ms < 120_000
        ? `${(ms / 1000).toFixed(1)}${NB}s`
        : `${Math.round(ms / 60_000)}${NB}min`;
export const fmtBytes = (b: number): string => `${(b / 1048576).toFixed(1)}${NB}MiB`;
export function fmtAgo(ms: number | null | undefined, now = Date.now()): string {
  if (!ms) return "—";
  const d = ms - now;
  const a = Math.abs(d);
  const s =
    a < 60_000
      ? `${Math.round(a / 1000)}${NB}s`
      : a < 3_600_000
        ? `${Math.round(a / 60_000)}${NB}min`
        : a < 172_800_000
          ? `${Math.round(a / 3_600_000)}${NB}h`
          : `${Math.round(a / 86_400_000)}${NB}d`;
  return d >= 0 ? `in${NB}${s}` : `${s}${NB}ago`;
}

export function Card(props: {
  title: string;
  children: ComponentChildren;
  id?: string;
  actions?: ComponentChildren;
}) {
  return (
    <section class="card" id={props.id} aria-label={props.title}>
      <header>
        <h2 title={props.title}>{props.title}</h2>
        {props.actions && <div class="actions">{props.actions}</div>}
      </header>
      {props.children}
    </section>
  );
}

export function ErrorLine(props: { error: string | undefined }) {
  return props.error ? (
    <p class="error" role="alert">
      {props.error}
    </p>
  ) : null;
}

export function Badge(props: { state: string; children?: ComponentChildren }) {
  const s = props.state;
  const tone = /^(ok|connected|ran|open|approved)$/.test(s)
    ? "good"
    : /^(error|failed|denied|expired|disconnected|crashed)$/.test(s)
      ? "bad"
      : /^(degraded|reconnecting|skipped|paused|stopped|connecting|aborted|waiting.*)$/.test(s)
        ? "warn"
        : /^(running|pending)$/.test(s)
          ? "info"
          : "neutral";
  return (
    <span class={`badge ${tone}`} data-state={s}>
      {props.children ?? s}
    </span>
  );
}

/** A button that runs `action`, disables itself meanwhile and shows the error it ended with. */
export function ActionButton(props: {
  action: () => Promise<unknown>;
  children: ComponentChildren;
  danger?: boolean;
  /** The action the view is for (Approve): drawn in the accent colour. */
  primary?: boolean;
  confirm?: string;
  label?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | undefined>(undefined);
  return (
    <span class="action">
      <button
        type="button"
        class={props.danger ? "danger" : props.primary ? "primary" : ""}
        aria-label={props.label}
        disabled={busy}
        onClick={async () => {
          if (props.confirm && !window.confirm(props.confirm)) return;
          setBusy(true);
          setErr(undefined);
          try {
            await props.action();
          } catch (e) {
            setErr((e as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        {props.children}
      </button>
      {err && (
        <span class="error" role="alert">
          {err}
        </span>
      )}
    </span>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

/**
 * A data table that reflows on a phone: below 640 px each row is a card and each cell is labelled by
 * its column header (copied here into `data-label`, so the views write plain <th>/<td>).
 */
export function Table(props: { children: ComponentChildren; id?: string; label?: string }) {
  const ref = useRef<HTMLTableElement>(null);
  useLayoutEffect(() => {
    const t = ref.current;
    if (!t) return;
    const heads = Array.from(t.querySelectorAll("thead th")).map((th) => th.textContent?.trim() ?? "");
    for (const tr of Array.from(t.querySelectorAll("tbody tr")))
      Array.from(tr.children).forEach((td, i) => td.setAttribute("data-label", heads[i] ?? ""));
  });
  return (
    <div class="scroll">
      <table ref={ref} class="reflow" id={props.id} aria-label={props.label}>
        {props.children}
      </table>
    </div>
  );
}

/** A moment in one style everywhere: relative ("5 min ago") with the absolute date on hover. */
export function When(props: { ms: number | null | undefined }) {
  if (!props.ms) return <span>—</span>;
  return (
    <time dateTime={new Date(props.ms).toISOString()} title={fmtTime(props.ms)}>
      {fmtAgo(props.ms)}
    </time>
  );
}
