/**
 * Sending a workspace file to a chat, shared by the `send_file` tool, the gateway's `files.send`
 * method and the HTTP API (`POST /v1/files/send`). The path is opened beneath the workspace without
 * following a symlink out of it (safe-open.ts), its size checked against the platform's limit for
 * that kind of file before anything is read or uploaded.
 */
import { extname } from "node:path";
import type { OutboundFile, OutboundFileKind } from "../core/outbox.js";
import { openBeneath } from "./safe-open.js";
import { ToolError } from "./tool.js";

/** The part of a channel send_file uses (tools never import `internal/channels/`). */
export interface FileChannel {
  readonly id: string;
  sendFile?(target: string, file: OutboundFile): Promise<void>;
  maxFileBytes?(kind: OutboundFileKind): number;
}

/** What send_file needs from the channel registry. */
export interface FileDelivery {
  resolve(target: string): { channel: FileChannel; rest: string; target: string };
}

/** How to show the file; `auto` picks by extension. */
export type SendAs = "auto" | OutboundFileKind;

const PHOTO = new Set(["jpg", "jpeg", "png", "webp"]);
const VOICE = new Set(["ogg", "oga", "opus"]);
const AUDIO = new Set(["mp3", "m4a", "aac", "wav", "flac"]);
const MIME: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  gif: "image/gif",
  ogg: "audio/ogg",
  oga: "audio/ogg",
  opus: "audio/ogg",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  wav: "audio/wav",
  flac: "audio/flac",
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
};

/** The kind a file is sent as. */
export function fileKind(name: string, as: SendAs = "auto"): OutboundFileKind {
  if (as !== "auto") return as;
  const ext = extname(name).slice(1).toLowerCase();
  if (PHOTO.has(ext)) return "photo";
  if (VOICE.has(ext)) return "voice";
  if (AUDIO.has(ext)) return "audio";
  return "document";
}

/** One request to send a file. */
export interface SendFileRequest {
  workspace: string;
  /** Full target `<channel>:<chat>` (or `last`). */
  target: string;
  path: string;
  caption?: string;
  as?: SendAs;
  /** Checks the real path before it is opened (a shared chat's view of the workspace); may throw. */
  beforeOpen?: (rel: string) => Promise<void>;
}

/** Sends the file; resolves to a one-line confirmation. Throws ToolError with a clear message. */
export async function sendWorkspaceFile(channels: FileDelivery, req: SendFileRequest): Promise<string> {
  let dest: ReturnType<FileDelivery["resolve"]>;
  try {
    dest = channels.resolve(req.target);
  } catch (err) {
    throw new ToolError("SEND_FAILED", (err as Error).message);
  }
  const { channel, rest } = dest;
  if (!channel.sendFile) throw new ToolError("SEND_NO_FILES", `the ${channel.id} channel cannot send files`);
  const { handle, rel } = await openBeneath(req.workspace, req.path, {
    mode: "r",
    ...(req.beforeOpen ? { beforeOpen: req.beforeOpen } : {}),
  });
  let data: Buffer;
  const name = rel.split("/").pop() ?? "file";
  const kind = fileKind(name, req.as);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ToolError("FILE_NOT_REGULAR", `"${req.path}" is not a regular file`);
    const limit = channel.maxFileBytes?.(kind) ?? Number.POSITIVE_INFINITY;
    if (st.size > limit)
      throw new ToolError(
        "FILE_TOO_LARGE",
        `"${rel}" is ${mib(st.size)}; ${channel.id} accepts at most ${mib(limit)} for a ${kind}. Send a smaller file (compress or split it).`,
      );
    data = await handle.readFile();
  } finally {
    await handle.close().catch(() => undefined);
  }
  const ext = extname(name).slice(1).toLowerCase();
  const file: OutboundFile = {
    name,
    data,
    kind,
    ...(MIME[ext] ? { mime: MIME[ext] } : {}),
    ...(req.caption?.trim() ? { caption: req.caption.trim() } : {}),
  };
  try {
    await channel.sendFile(rest, file);
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new ToolError(
      code === "CHANNEL_FILE_TOO_LARGE" ? "FILE_TOO_LARGE" : "SEND_FAILED",
      `could not send ${rel} to ${dest.target}: ${(err as Error).message}`,
    );
  }
  return `sent ${rel} (${mib(data.length)}) to ${dest.target} as a ${kind}`;
}

function mib(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`;
}
