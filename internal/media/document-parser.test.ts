/**
 * The PDF reader child's limits, on the real child process and the issue-32 bomb: the time limit and
 * the memory watchdog each end it with one clear MediaFailure, and a normal PDF still reads.
 */
import { describe, expect, it } from "vitest";
import { pdfBomb } from "../../test/helpers/pdf-bomb.js";
import { tinyPdf } from "../../test/helpers/tiny-pdf.js";
import { parsePdfInChild } from "./document-parser.js";
import { MediaFailure } from "./media-errors.js";

const fail = (p: Promise<unknown>): Promise<MediaFailure> =>
  p.then(
    () => {
      throw new Error("expected a MediaFailure");
    },
    (e: unknown) => e as MediaFailure,
  );

describe("the PDF reader child", () => {
  it("reads a normal PDF", async () => {
    const r = await parsePdfInChild(tinyPdf("Quarterly figures"), "q.pdf", {
      maxChars: 1000,
      timeoutMs: 60_000,
      memoryMb: 512,
    });
    expect(r).toEqual({ text: "Quarterly figures", pages: 1, truncated: false });
  }, 90_000);

  it("is killed at its time limit with one clear message", async () => {
    const e = await fail(
      parsePdfInChild(pdfBomb(), "bomb.pdf", { maxChars: 60_000, timeoutMs: 3_000, memoryMb: 4096 }),
    );
    expect(e).toBeInstanceOf(MediaFailure);
    expect(e.code).toBe("MEDIA_TOO_LARGE");
    expect(e.message).toBe('I stopped reading the PDF "bomb.pdf": it took longer than 3 s to read.');
  }, 90_000);

  it("is killed at its memory limit with one clear message, where a normal PDF fits", async () => {
    // The same limit reads a normal PDF (the child's own footprint, tsx included, is under it).
    const ok = await parsePdfInChild(tinyPdf("fits"), "f.pdf", {
      maxChars: 1000,
      timeoutMs: 60_000,
      memoryMb: 112,
    });
    expect(ok.text).toBe("fits");
    const e = await fail(
      parsePdfInChild(pdfBomb(), "bomb.pdf", { maxChars: 60_000, timeoutMs: 120_000, memoryMb: 112 }),
    );
    expect(e.code).toBe("MEDIA_TOO_LARGE");
    expect(e.message).toBe(
      'I stopped reading the PDF "bomb.pdf": it needed more than 112 MB of memory to read.',
    );
  }, 150_000);

  it("a malformed PDF is one clear failure", async () => {
    const e = await fail(
      parsePdfInChild(Buffer.from("%PDF-1.4 nothing here"), "b.pdf", {
        maxChars: 1000,
        timeoutMs: 60_000,
        memoryMb: 256,
      }),
    );
    expect(e.code).toBe("MEDIA_EXTRACT_FAILED");
    expect(e.message).toMatch(/^I could not read the PDF "b\.pdf": /);
  }, 90_000);
});
