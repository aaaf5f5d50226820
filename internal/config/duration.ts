/**
 * Parses durations such as `30m`, `1h30m`, `45s`, `500ms`, `2d`, `0`, or a number of milliseconds.
 * Returns milliseconds, or `undefined` when the input is not a duration.
 */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === "number") return Number.isFinite(input) && input >= 0 ? input : undefined;
  const s = input.trim();
  if (s === "0" || s === "off") return 0;
  if (/^\d+$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
  let total = 0;
  let matched = 0;
  for (const m of s.matchAll(re)) {
    const n = Number(m[1]);
    const unit = m[2] as keyof typeof UNIT_MS;
    total += n * UNIT_MS[unit];
    matched += m[0].length;
  }
  if (matched !== s.length || matched === 0) return undefined;
  return Math.round(total);
}

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** Formats milliseconds compactly, e.g. `1h30m`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0";
  if (ms < 1000) return `${ms}ms`;
  const parts: string[] = [];
  let rest = Math.round(ms / 1000);
  for (const [unit, size] of [
    ["d", 86400],
    ["h", 3600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join("");
}
