/**
 * Documents in: text-like files (txt, md, csv, json, code...) and PDFs become text the model reads.
 * PDF text comes from `unpdf` (PDF.js, pure JavaScript, no native download), imported on the first
 * PDF so it costs nothing at start.
 */
import { extname } from "node:path";
import { MediaFailure, mb } from "./media-errors.js";

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
  limits: { maxBytes: number; maxChars: number },
): Promise<ExtractedDocument> {
  if (data.length > limits.maxBytes)
    throw new MediaFailure(
      "MEDIA_TOO_LARGE",
      `The document is too large to read (${mb(data.length)}; the limit is ${mb(limits.maxBytes)}).`,
    );
  const kind = documentKind(name, mime);
  if (kind === "other")
    throw new MediaFailure("MEDIA_UNSUPPORTED", `I can only read text files and PDFs, not "${name}".`);
  let text: string;
  let pages: number | undefined;
  if (kind === "pdf") ({ text, pages } = await pdfText(data, name));
  else {
    if (data.subarray(0, 8192).includes(0))
      throw new MediaFailure("MEDIA_UNSUPPORTED", `"${name}" looks binary, not like a text file.`);
    text = data.toString("utf8");
  }
  const truncated = text.length > limits.maxChars;
  return {
    text: truncated ? text.slice(0, limits.maxChars) : text,
    truncated,
    ...(pages !== undefined ? { pages } : {}),
  };
}

async function pdfText(data: Buffer, name: string): Promise<{ text: string; pages: number }> {
  try {
    const { extractText, getDocumentProxy } = await import("unpdf");
    // PDF.js takes ownership of (and detaches) the array it is given: hand it a copy.
    const pdf = await getDocumentProxy(new Uint8Array(data));
    const { totalPages, text } = await extractText(pdf, { mergePages: true });
    return { text: text.trim(), pages: totalPages };
  } catch (err) {
    throw new MediaFailure(
      "MEDIA_EXTRACT_FAILED",
      `I could not read the PDF "${name}": ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
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
