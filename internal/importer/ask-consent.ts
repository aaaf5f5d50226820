/**
 * Asking the owner, once, about everything an import or a restore would leave out for want of their
 * yes (what grants power, files the desk would hold), when they sit at a terminal.
 *
 * Invariants:
 * - asked only when both stdin and stdout are a terminal and no `--accept`/`--accept-all-risky` was
 *   given (the owner already answered) and it is not a dry run or `--check` (the caller's part);
 *   otherwise nothing is asked and {@link NOT_ASKED} says so in one line;
 * - every item is listed before the question, one line each, through {@link visibleLine}: a key or
 *   a name from the source cannot move the cursor, clear the line or hide what it is;
 * - the default is no: an empty answer, anything but `y`, or the end of input takes nothing.
 */
import { createInterface } from "node:readline";
import { visibleLine } from "../core/visible-text.js";

/** One thing to ask about: its `--accept` key, its group (an area, a table) and what it does. */
export interface AskItem {
  group: string;
  key: string;
  text: string;
}

/** Where the owner is asked: a readable and a writable stream, terminals in real use. */
export interface AskIO {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
}

/** The one line printed when there is something to confirm but nobody to ask. */
export const NOT_ASKED =
  "Not asked (no terminal, or --accept given): what needs your confirmation was left out; take it with --accept KEY,... or --accept-all-risky";

/** True when the owner can be asked: both ends a terminal and no `--accept` flags given. */
export function canAsk(io: AskIO, flagsGiven: boolean): boolean {
  return !flagsGiven && io.input.isTTY === true && io.output.isTTY === true;
}

/**
 * Lists `items` and asks once: all (`y`), none (`N`, the default) or group by group (`g`, then
 * `y/N` per group). Returns the keys the owner took.
 */
export async function askConsent(items: readonly AskItem[], io: AskIO): Promise<string[]> {
  if (items.length === 0) return [];
  const groups = new Map<string, AskItem[]>();
  for (const i of items) groups.set(i.group, [...(groups.get(i.group) ?? []), i]);
  const out = io.output;
  out.write(
    `\nThese grant power or would be held on the desk; each is left out unless you say yes:\n${[...groups]
      .map(
        ([g, its]) =>
          `  ${visibleLine(g)}:\n${its.map((i) => `    [${visibleLine(i.key)}] ${visibleLine(i.text)}`).join("\n")}`,
      )
      .join("\n")}\n`,
  );
  const rl = createInterface({ input: io.input, terminal: false, crlfDelay: Infinity });
  const lines = rl[Symbol.asyncIterator]();
  const answer = async (q: string): Promise<string> => {
    out.write(q);
    const r = await lines.next();
    return r.done === true ? "" : String(r.value).trim().toLowerCase();
  };
  try {
    const all = await answer(`Take all ${items.length}? [y = all, N = none, g = decide per group] `);
    if (all === "y" || all === "yes") return items.map((i) => i.key);
    if (all !== "g") return [];
    const keys: string[] = [];
    for (const [g, its] of groups)
      if (["y", "yes"].includes(await answer(`Take the ${its.length} of ${visibleLine(g)}? [y/N] `)))
        keys.push(...its.map((i) => i.key));
    return keys;
  } finally {
    rl.close();
  }
}
