/** Document extraction limits and classification, voice-reply text cleanup and send_file kinds. */
import { describe, expect, it } from "vitest";
import { tinyPdf } from "../../test/helpers/tiny-pdf.js";
import { stripMarkdown } from "./strip-markdown.js";
import { fileKind } from "../tools/send-file.js";
import { documentKind, extractDocument } from "./documents.js";
import { MediaFailure } from "./media-errors.js";

const limits = { maxBytes: 1000, maxChars: 1000 };

describe("documents", () => {
  it("classifies by MIME type first, then by extension", () => {
    expect(documentKind("x.bin", "application/pdf")).toBe("pdf");
    expect(documentKind("report.PDF")).toBe("pdf");
    expect(documentKind("main.rs")).toBe("text");
    expect(documentKind("noext", "text/plain")).toBe("text");
    expect(documentKind("photo.heic", "image/heic")).toBe("other");
    expect(documentKind("archive.zip")).toBe("other");
  });

  it("cuts long text at max_chars and says so", async () => {
    const d = await extractDocument(Buffer.from("a".repeat(1500)), "a.txt", "text/plain", {
      maxBytes: 10_000,
      maxChars: 1000,
    });
    expect(d.text).toHaveLength(1000);
    expect(d.truncated).toBe(true);
  });

  it("refuses oversize, binary and unsupported files with a message for the user", async () => {
    const codes = async (p: Promise<unknown>): Promise<string> =>
      p.then(
        () => "ok",
        (e: unknown) => (e instanceof MediaFailure ? e.code : String(e)),
      );
    expect(await codes(extractDocument(Buffer.alloc(1001, 97), "a.txt", undefined, limits))).toBe(
      "MEDIA_TOO_LARGE",
    );
    expect(await codes(extractDocument(Buffer.from([1, 0, 2]), "a.txt", undefined, limits))).toBe(
      "MEDIA_UNSUPPORTED",
    );
    expect(await codes(extractDocument(Buffer.from("PK"), "a.zip", undefined, limits))).toBe(
      "MEDIA_UNSUPPORTED",
    );
    expect(await codes(extractDocument(Buffer.from("%PDF-broken"), "b.pdf", undefined, limits))).toBe(
      "MEDIA_EXTRACT_FAILED",
    );
  });

  it("extracts a PDF's text and page count", async () => {
    const d = await extractDocument(tinyPdf("Hello PDF (world)"), "h.pdf", "application/pdf", {
      maxBytes: 100_000,
      maxChars: 1000,
    });
    expect(d).toEqual({ text: "Hello PDF (world)", truncated: false, pages: 1 });
  });
});

describe("voice replies and send_file kinds", () => {
  it("speaks the words, not the markdown", () => {
    expect(stripMarkdown("# Title\nIt is **sunny** and `warm`, see [the map](https://x.y).")).toBe(
      "Title\nIt is sunny and warm, see the map.",
    );
    expect(stripMarkdown("Run:\n```sh\nls -la\n```\ndone")).toBe("Run:\n (code omitted) \ndone");
  });

  it("picks photo, voice, audio or document by extension unless told", () => {
    expect(fileKind("a.JPG")).toBe("photo");
    expect(fileKind("a.ogg")).toBe("voice");
    expect(fileKind("a.mp3")).toBe("audio");
    expect(fileKind("a.pdf")).toBe("document");
    expect(fileKind("a.png", "document")).toBe("document");
  });
});
