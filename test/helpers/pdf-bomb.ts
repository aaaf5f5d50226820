/**
 * The PDF bomb of issue 32: a small file (about 66 KB) whose 100 pages all share one FlateDecode
 * content stream that inflates to about 21 MB of text-showing operators, so a parser that renders
 * every page does 100 x 21 MB of work from 66 KB of input. Valid PDF (correct xref offsets).
 */
import { deflateSync } from "node:zlib";

export interface PdfBombOptions {
  pages?: number;
  /** Inflated size of the shared content stream, in bytes. */
  streamBytes?: number;
}

export function pdfBomb(opts: PdfBombOptions = {}): Buffer {
  const pages = opts.pages ?? 100;
  const target = opts.streamBytes ?? 21 * 1024 * 1024;
  // One line of text over and over: it deflates about 300:1.
  const lines: string[] = ["BT /F1 9 Tf 20 780 Td 10 TL"];
  const line = "(A line of the bomb) Tj T*";
  for (let size = lines[0]!.length; size < target; size += line.length + 1) lines.push(line);
  lines.push("ET");
  const content = deflateSync(Buffer.from(lines.join("\n"), "latin1"), { level: 9 });
  const kids = Array.from({ length: pages }, (_, i) => `${5 + i} 0 R`).join(" ");
  const objects: (string | Buffer)[] = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    Buffer.concat([
      Buffer.from(`<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`, "latin1"),
      content,
      Buffer.from("\nendstream", "latin1"),
    ]),
  ];
  for (let i = 0; i < pages; i++)
    objects.push(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
    );
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n", "latin1")];
  let offset = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(offset);
    const b = Buffer.concat([
      Buffer.from(`${i + 1} 0 obj\n`, "latin1"),
      typeof o === "string" ? Buffer.from(o, "latin1") : o,
      Buffer.from("\nendobj\n", "latin1"),
    ]);
    parts.push(b);
    offset += b.length;
  });
  let tail = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) tail += `${String(off).padStart(10, "0")} 00000 n \n`;
  tail += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${offset}\n%%EOF\n`;
  parts.push(Buffer.from(tail, "latin1"));
  return Buffer.concat(parts);
}
