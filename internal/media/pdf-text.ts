/**
 * PDF text, page by page, with PDF.js (through `unpdf`). Runs in the parser child
 * (`parse-child.ts`), never in the daemon: PDF.js can be made to spend minutes and gigabytes on a
 * small file (issue 32's 66 KB bomb). Pages are read one at a time and reading stops once `maxChars`
 * characters are in hand, so a long or hostile document costs no more than the text we keep.
 */

/** The text of a PDF, its page count, and whether reading stopped at `maxChars`. */
export interface PdfText {
  text: string;
  pages: number;
  truncated: boolean;
}

/** The same whitespace normalisation as unpdf's `extractText(..., { mergePages: true })`. */
function normalize(texts: string[]): string {
  return texts
    .join("\n")
    .replace(/[^\S\n]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n");
}

export async function pdfText(data: Uint8Array, maxChars: number): Promise<PdfText> {
  const { getDocumentProxy } = await import("unpdf");
  const pdf = await getDocumentProxy(data);
  const texts: string[] = [];
  let chars = 0;
  let truncated = false;
  for (let n = 1; n <= pdf.numPages; n++) {
    const page = await pdf.getPage(n);
    const content = await page.getTextContent();
    const t = content.items
      .map((item) => ("str" in item ? item.str + (item.hasEOL ? "\n" : "") : ""))
      .join("");
    page.cleanup();
    texts.push(t);
    chars += t.length;
    if (chars > maxChars && n < pdf.numPages) {
      truncated = true;
      break;
    }
  }
  const pages = pdf.numPages;
  await pdf.destroy();
  const text = normalize(texts).trim();
  return { text, pages, truncated: truncated || text.length > maxChars };
}
