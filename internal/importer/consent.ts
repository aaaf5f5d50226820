/**
 * The owner's yes for what grants power, given as flags (`--accept KEY,...`, `--accept-all-risky`),
 * shared by `familiar import openclaw` and `familiar restore`. Interactive questions are not used:
 * a dry run (or `restore --check`) lists every key, the owner reads them and runs again with the
 * ones they want. Invariant: nothing risky is taken unless its key was passed (or everything was),
 * and a key that matched nothing offered is reported, so a typo never passes silently.
 */
import type { ImportItem, PlannedConfig } from "./import-types.js";

/** Which risky keys the owner accepted. */
export class Consent {
  private readonly keys: readonly string[];
  private readonly offered = new Set<string>();

  /**
   * @param keys the keys the owner passed; one ending in `*` accepts every key it starts
   *   (`skill-file:tide-check/*`).
   * @param all `--accept-all-risky`: every key is accepted.
   */
  constructor(
    keys: readonly string[] = [],
    readonly all = false,
  ) {
    this.keys = keys.map((k) => k.trim()).filter((k) => k !== "");
  }

  /** Parses the comma-separated values of one or more `--accept` flags. */
  static fromFlags(accept: string | readonly string[] | undefined, all: boolean | undefined): Consent {
    const list = accept === undefined ? [] : typeof accept === "string" ? [accept] : accept;
    return new Consent(
      list.flatMap((a) => a.split(",")),
      all === true,
    );
  }

  /** True when `key` was accepted; records it as offered either way. */
  accepts(key: string): boolean {
    this.offered.add(key);
    return this.all || this.keys.some((k) => matches(k, key));
  }

  /** The keys the owner passed that matched nothing offered. */
  unmatched(): string[] {
    return this.keys.filter((k) => ![...this.offered].some((o) => matches(k, o)));
  }
}

function matches(pattern: string, key: string): boolean {
  return pattern.endsWith("*") ? key.startsWith(pattern.slice(0, -1)) : pattern === key;
}

/**
 * True when `url` names this machine (127.0.0.0/8, ::1, localhost): whoever listens there is
 * already on the owner's machine, so sending a secret there does not hand it to a foreign host.
 */
export function isLocalUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  return (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "[::1]" ||
    /^127(\.\d{1,3}){3}$/.test(host)
  );
}

/** The host of `url` (lower case), or undefined when it is not a URL. */
export function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * A planned config change that grants power: returned as is (its item naming the key and that it
 * was accepted) when the owner accepted `key`; else undefined, and a `confirm` item that says what
 * it would do and why it is asked goes to `items`.
 */
export function gate(
  consent: Consent,
  key: string,
  why: string,
  p: PlannedConfig,
  items: ImportItem[],
): PlannedConfig | undefined {
  if (consent.accepts(key))
    return { ...p, item: { ...p.item, key, detail: `${p.item.detail ?? ""}; accepted: ${why}` } };
  items.push({
    area: p.item.area,
    name: p.item.name,
    status: "confirm",
    key,
    detail: `${p.item.detail ?? ""}; ${why}`,
  });
  return undefined;
}
