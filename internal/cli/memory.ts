/**
 * `familiar memory status|reindex`: asks the running daemon's gateway (`memory.status`,
 * `memory.reindex`; token required like every gateway method) about the memory index: files, chunks,
 * vectors, the embedding model and its health, and the progress of a background rebuild.
 */
import { GatewayClient, type GatewayClientError } from "../gateway/client.js";
import { connectAsOwner } from "./owner-client.js";
import { localTime } from "./cli-format.js";

export interface MemoryCliOptions {
  config: string;
  url?: string;
  token?: string;
  json?: boolean;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Renders `memory.status` for humans. */
export function formatMemoryStatus(s: Record<string, unknown>): string {
  const e = obj(s.embeddings);
  const fill = obj(s.fill);
  const lines = [
    `files        ${String(s.files ?? 0)} (${String(s.chunks ?? 0)} chunks, ${String(s.sessionChunks ?? 0)} transcript turns)`,
  ];
  if (e.state === "off")
    lines.push("embeddings   off (keyword search only; set memory.embeddings to search by meaning)");
  else
    lines.push(
      `embeddings   ${String(e.model ?? "?")} ${String(e.state ?? "?")}${
        e.until ? ` until ${localTime(Number(e.until))}` : ""
      }${e.lastError ? ` (${String(e.lastError)})` : ""}`,
    );
  lines.push(
    `vectors      ${String(s.vectors ?? 0)} stored, ${String(s.pending ?? 0)} pending${
      s.dimensions ? `, ${String(s.dimensions)} dimensions` : ""
    }${s.storedModel ? ` (${String(s.storedModel)})` : ""}`,
  );
  if (fill.running)
    lines.push(
      `${fill.rebuild ? "rebuilding" : "embedding"}   ${String(fill.done ?? 0)}/${String(fill.total ?? 0)} chunks`,
    );
  lines.push(`sessions     ${s.sessions ? "embedded (memory.sessions: true)" : "keyword index only"}`);
  if (s.vectorStore !== "ok") lines.push(`vector store ${String(s.vectorStore)}`);
  return lines.join("\n");
}

async function call(
  method: "memory.status" | "memory.reindex",
  opts: MemoryCliOptions,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<Record<string, unknown> | undefined> {
  let client: GatewayClient;
  try {
    client = await connectAsOwner(opts, "familiar-memory");
  } catch (e) {
    err.write(`familiar memory: ${(e as GatewayClientError).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
  try {
    return await client.request<Record<string, unknown>>(method);
  } catch (e) {
    err.write(`familiar memory: ${(e as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  } finally {
    await client.close();
    void out;
  }
}

/** `familiar memory status` */
export async function memoryStatusCommand(
  opts: MemoryCliOptions,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<void> {
  const s = await call("memory.status", opts, out, err);
  if (s) out.write((opts.json ? JSON.stringify(s, null, 2) : formatMemoryStatus(s)) + "\n");
}

/** `familiar memory reindex` */
export async function memoryReindexCommand(
  opts: MemoryCliOptions,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<void> {
  const r = await call("memory.reindex", opts, out, err);
  if (!r) return;
  out.write(
    opts.json
      ? JSON.stringify(r, null, 2) + "\n"
      : r.embedding
        ? `re-read the memory files; re-embedding ${String(r.chunks)} chunks in the background (familiar memory status shows progress)\n`
        : "re-read the memory files (keyword index; embeddings are off)\n",
  );
}
