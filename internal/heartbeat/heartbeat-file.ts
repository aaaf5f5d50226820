/**
 * HEARTBEAT.md: the owner's checklist for the heartbeat. A file with nothing actionable (only headings,
 * HTML comments and blank lines) means "nothing to check", and the heartbeat then makes zero model calls.
 */
import { readWorkspaceFile } from "../workspace/workspace-door.js";
import { reportRefusal } from "../workspace/refusal-log.js";

/** A HEARTBEAT.md bigger than this is refused (it is a checklist). */
const MAX_HEARTBEAT_BYTES = 256 * 1024;

/** The file name in the workspace. */
export const HEARTBEAT_FILE = "HEARTBEAT.md";

/** True when the text holds something besides headings, HTML comments and blank lines. */
export function hasHeartbeatTasks(text: string): boolean {
  // Comments may span lines and sit inside other lines; an unclosed one runs to the end (as in HTML).
  const withoutComments = text.replace(/<!--[\s\S]*?(?:-->|$)/g, "");
  for (const raw of withoutComments.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "") continue;
    if (/^#{1,6}(\s|$)/.test(line)) continue;
    return true;
  }
  return false;
}

/**
 * Why a heartbeat has nothing to do, or undefined when HEARTBEAT.md has tasks. Read through the
 * workspace door: a HEARTBEAT.md that is a link is refused (logged once) and the heartbeat skips.
 */
export async function heartbeatSkipReason(workspace: string): Promise<string | undefined> {
  let text: string;
  try {
    const f = await readWorkspaceFile(workspace, HEARTBEAT_FILE, { maxBytes: MAX_HEARTBEAT_BYTES });
    if (!f) return "HEARTBEAT.md is missing";
    text = f.text;
  } catch (err) {
    if (reportRefusal(err, "heartbeat")) return `HEARTBEAT.md refused: ${(err as Error).message}`;
    const code = (err as NodeJS.ErrnoException).code;
    return `HEARTBEAT.md cannot be read (${code ?? "error"})`;
  }
  if (text.trim() === "") return "HEARTBEAT.md is empty";
  if (!hasHeartbeatTasks(text)) return "HEARTBEAT.md has only headings, comments and blank lines";
  return undefined;
}

/** Marker a heartbeat reply starts with when nothing needs the owner's attention. */
export const HEARTBEAT_OK = "HEARTBEAT_OK";
/** At most this many characters may follow the marker for the reply still to count as "all quiet". */
export const HEARTBEAT_OK_MAX_EXTRA = 300;

/** True when a reply is an acknowledgement that must not be delivered. */
export function isHeartbeatOk(reply: string): boolean {
  // Models like to wrap the marker in markdown (**HEARTBEAT_OK**, `HEARTBEAT_OK`).
  const s = reply.trim().replace(/^[*_`"'\s]+/, "");
  if (!s.startsWith(HEARTBEAT_OK)) return false;
  const rest = s
    .slice(HEARTBEAT_OK.length)
    .replace(/^[*_`"'.!:\s-]+/, "")
    .trim();
  return rest.length <= HEARTBEAT_OK_MAX_EXTRA;
}
