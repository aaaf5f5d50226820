/** A memory search hit and how a chunk row becomes one. */

/** One search hit. */
export interface MemoryHit {
  source: "file" | "session";
  /** Workspace-relative file path, or `session <key> <day> <role>` for transcripts. */
  where: string;
  /** First line of the chunk (files). */
  line?: number;
  lineEnd?: number;
  /** Heading path of the chunk (files). */
  title: string;
  /** YYYY-MM-DD of a daily note or transcript turn. */
  date?: string;
  /** The session key and message id of a transcript turn. */
  session?: { key: string; messageId: number };
  snippet: string;
  /** Fused score (higher is better). */
  score: number;
  /** Which searches found it. */
  match: "keyword" | "meaning" | "both";
}

/** A chunk with its text, as the index reads it. */
export interface ChunkRow {
  id: number;
  source: string;
  ref: string;
  message_id: number | null;
  heading: string;
  line_start: number | null;
  line_end: number | null;
  day: string | null;
  body: string;
}

const SNIPPET_CHARS = 320;

/** Builds the hit of a chunk: FTS snippet when the keyword search found it, else the chunk's start. */
export function toHit(
  r: ChunkRow,
  f: { keywordRank?: number; vectorRank?: number },
  snip: string | undefined,
  score: number,
): MemoryHit {
  const text = (snip ?? excerpt(r.body)).replace(/\s+/g, " ").trim();
  const match = f.keywordRank && f.vectorRank ? "both" : f.keywordRank ? "keyword" : "meaning";
  const common = { snippet: text, score: Math.round(score * 1e5) / 1e5, match } as const;
  if (r.source === "session")
    return {
      source: "session",
      where: `session ${r.heading}`,
      title: "",
      ...(r.day ? { date: r.day } : {}),
      ...(r.message_id !== null ? { session: { key: r.ref, messageId: r.message_id } } : {}),
      ...common,
    };
  return {
    source: "file",
    where: r.ref,
    ...(r.line_start !== null ? { line: r.line_start } : {}),
    ...(r.line_end !== null ? { lineEnd: r.line_end } : {}),
    title: r.heading,
    ...(r.day ? { date: r.day } : {}),
    ...common,
  };
}

function excerpt(body: string): string {
  return body.length <= SNIPPET_CHARS ? body : `${body.slice(0, SNIPPET_CHARS)}…`;
}
