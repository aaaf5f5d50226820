/**
 * The parser child's entry: reads one untrusted file on stdin, its job on argv (`{"kind":"pdf",
 * "maxChars":N}`), and writes one JSON line on stdout: `{"ok":true,"text","pages","truncated"}` or
 * `{"ok":false,"message"}`. It holds no secrets (empty environment) and is started, limited and
 * killed by `document-parser.ts`; nothing it prints is trusted beyond being text for the model.
 */
import { pdfText } from "./pdf-text.js";

interface Job {
  kind: "pdf";
  maxChars: number;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "{}") as Job;
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const data = new Uint8Array(Buffer.concat(chunks));
  let out: string;
  try {
    if (job.kind !== "pdf") throw new Error(`unknown job kind ${String(job.kind)}`);
    const r = await pdfText(data, job.maxChars);
    out = JSON.stringify({ ok: true, ...r, text: r.text.slice(0, job.maxChars) });
  } catch (err) {
    out = JSON.stringify({ ok: false, message: String((err as Error)?.message ?? err).slice(0, 500) });
  }
  process.stdout.write(out + "\n", () => process.exit(0));
}

void main();
