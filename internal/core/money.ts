/**
 * The one money format of every surface (CLI, trace text, turn log; the console mirrors it in
 * console/src/ui.tsx). A cost that includes calls of a model without a price is an estimate: those
 * calls are counted at `budgets.default_price`, never as free, and the figure carries "≈".
 */

/** The estimate mark put before a cost that includes calls counted at `budgets.default_price`. */
export const ESTIMATE_MARK = "≈";

/**
 * `$0.15`, `$0.0031`, `$0.000048`, `≈$0.15`. Two decimals from a cent up; below a cent two significant
 * digits (a single call often costs a fraction of a cent, and `$0.0000` would read as free);
 * `$0.00` for nothing.
 */
export function formatUsd(usd: number, estimated = false): string {
  return `${estimated ? ESTIMATE_MARK : ""}$${usd.toFixed(usdDigits(usd))}`;
}

/** Decimals for {@link formatUsd}: 2 from a cent up (and for 0), else two significant digits, at most 8. */
export function usdDigits(usd: number): number {
  const abs = Math.abs(usd);
  if (abs === 0 || abs >= 0.01) return 2;
  return Math.min(8, Math.max(4, Math.ceil(-Math.log10(abs)) + 1));
}

/**
 * The reason beside an estimate, one line: how many calls were counted at the default price and what
 * that price is.
 */
export function estimateReason(calls: number, price: { input: number; output: number }): string {
  return (
    `${ESTIMATE_MARK}: ${calls} call(s) to a model without a price in models.pricing, counted at ` +
    `budgets.default_price ($${price.input} input / $${price.output} output per 1M tokens)`
  );
}
