/**
 * Documents in: text-like files (txt, md, csv, json, code...) and PDFs become text the model reads.
 * PDF text comes from `unpdf` (PDF.js) in a bounded child process (document-parser.ts), never on the
 * daemon's event loop. A text file is decoded here, but only as many bytes as the character limit
 * can use (4 x max_chars), so its cost on the loop is bounded whatever its size.
 */
import { extname } from "node:path";
import { parsePdfInChild } from "./document-parser.js";
import { MediaFailure, mb } from "./media-errors.js";

/** Default limits of the PDF reader child (`media.documents.parse_timeout_s` / `parse_memory_mb`). */
export const DEFAULT_PARSE_TIMEOUT_MS = 30_000;
export const DEFAULT_PARSE_MEMORY_MB = 256;

/** Extensions read as UTF-8 text (code, data, markup, config). */
const TEXT_EXT = new Set(
  (
    "txt md markdown rst org csv tsv json jsonl ndjson yaml yml toml ini cfg conf env log xml html htm css " +
    "js mjs cjs ts tsx jsx py rb go rs java kt kts c h cc cpp hpp cs swift php pl lua sh bash zsh fish ps1 " +
    "sql r scala clj ex exs erl hs ml vue svelte dart tex bib srt vtt diff patch"
  ).split(" "),
);

/** What a file is to us. */
export type DocumentKind = "text" | "pdf" | "other";

/** Classifies by MIME type first, then by extension. */
export function documentKind(name: string, mime?: string): DocumentKind {
  const m = (mime ?? "").toLowerCase();
  if (m === "application/pdf") return "pdf";
  const ext = extname(name).slice(1).toLowerCase();
  if (ext === "pdf") return "pdf";
  if (m.startsWith("text/") || /^application\/(json|x-yaml|yaml|xml|x-sh|javascript|toml)/.test(m))
    return "text";
  return TEXT_EXT.has(ext) ? "text" : "other";
}

/** The extracted text of a document. */
export interface ExtractedDocument {
  text: string;
  /** True when the text was cut at `maxChars`. */
  truncated: boolean;
  /** Pages of a PDF. */
  pages?: number;
}

/** Extracts the text of a text-like file or PDF; other files are refused with MEDIA_UNSUPPORTED. */
export async function extractDocument(
  data: Buffer,
  name: string,
  mime: string | undefined,
  limits: { maxBytes: number; maxChars: number; parseTimeoutMs?: number; parseMemoryMb?: number },
): Promise<ExtractedDocument> {
  if (data.length > limits.maxBytes)
    throw new MediaFailure(
      "MEDIA_TOO_LARGE",
      `The document is too large to read (${mb(data.length)}; the limit is ${mb(limits.maxBytes)}).`,
    );
  const kind = documentKind(name, mime);
  if (kind === "other")
    throw new MediaFailure("MEDIA_UNSUPPORTED", `I can only read text files and PDFs, not "${name}".`);
  if (kind === "pdf") {
    const r = await parsePdfInChild(data, name, {
      maxChars: limits.maxChars,
      timeoutMs: limits.parseTimeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS,
      memoryMb: limits.parseMemoryMb ?? DEFAULT_PARSE_MEMORY_MB,
    });
    return { text: r.text, truncated: r.truncated, pages: r.pages };
  }
  if (data.subarray(0, 8192).includes(0))
    throw new MediaFailure("MEDIA_UNSUPPORTED", `"${name}" looks binary, not like a text file.`);
  // A UTF-8 character is at most 4 bytes (and at least one UTF-16 unit per 3 bytes), so this prefix
  // holds more than max_chars characters whenever the file does: nothing beyond it is decoded.
  const prefix = data.subarray(0, limits.maxChars * 4 + 4);
  const text = prefix.toString("utf8");
  const truncated = text.length > limits.maxChars || prefix.length < data.length;
  return { text: truncated ? text.slice(0, limits.maxChars) : text, truncated };
}

/** The user message a document becomes: the saved path, then the text, fenced. */
export function documentMessage(caption: string, rel: string, name: string, doc: ExtractedDocument): string {
  const head = `[The user sent the document "${name}"${doc.pages !== undefined ? ` (${doc.pages} pages)` : ""}, saved in the workspace at ${rel}]`;
  const tail = doc.truncated
    ? `\n[Text cut after ${doc.text.length} characters; read the file for the rest]`
    : "";
  const body = doc.text.trim()
    ? `\n<document name="${name}">\n${doc.text}\n</document>${tail}`
    : doc.truncated
      ? "\n[Text not included: the other documents of this message used the text limit; read the file]"
      : "\n[No text could be extracted]";
  return `${caption ? `${caption}\n\n` : ""}${head}${body}`;
}

/** The user message a transcribed voice note becomes. */
export function voiceMessage(caption: string, transcript: string, rel?: string): string {
  const where = rel ? `, saved in the workspace at ${rel}` : "";
  return `${caption ? `${caption}\n\n` : ""}[Voice note${where}; transcript follows]\n${transcript || "(no speech recognised)"}`;
}
