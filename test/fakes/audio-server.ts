/**
 * A fake OpenAI-compatible audio server on 127.0.0.1: `POST /v1/audio/transcriptions` (multipart, as
 * the openai SDK sends it) answers a scripted transcript, `POST /v1/audio/speech` (JSON) answers
 * fake OGG bytes. Every call is recorded with its fields and the uploaded file, so tests can check
 * what was sent, and that nothing was (an over-size voice note).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeBilling } from "./fake-billing.js";

/** One recorded transcription request. */
export interface TranscriptionCall {
  model: string;
  language?: string;
  responseFormat?: string;
  fileName: string;
  fileType: string;
  file: Buffer;
  auth: string | undefined;
}

/** One recorded speech request. */
export interface SpeechCall {
  model: string;
  voice: string;
  input: string;
  responseFormat?: string;
  auth: string | undefined;
}

/** The bytes the fake speaks (an OGG page header and a marker). */
export const FAKE_SPEECH = Buffer.from("OggS\u0000fake-opus-speech");

export class FakeAudioServer {
  readonly transcriptions: TranscriptionCall[] = [];
  readonly speeches: SpeechCall[] = [];
  /** The next transcripts (the last one repeats). */
  transcripts: string[] = ["hello from a voice note"];
  /** Seconds reported in the transcription usage. */
  seconds = 3;
  /** Status to fail the next call with (then cleared). */
  failNext: number | undefined;
  /** Bills each transcription of the models it names, per minute of `seconds` (fake-billing.ts). */
  billing: FakeBilling | undefined;
  private server: Server;

  constructor() {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    return this;
  }

  /** `http://127.0.0.1:<port>/v1` */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://x");
    const auth = req.headers.authorization;
    if (this.failNext !== undefined) {
      const status = this.failNext;
      this.failNext = undefined;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "scripted failure", type: "server_error" } }));
      return;
    }
    if (req.method === "POST" && url.pathname === "/v1/audio/transcriptions") {
      const form = await new Request("http://x/", {
        method: "POST",
        headers: { "content-type": String(req.headers["content-type"] ?? "") },
        body: raw,
      }).formData();
      const file = form.get("file");
      if (!(file instanceof Blob)) {
        res.writeHead(400).end(JSON.stringify({ error: { message: "file is required" } }));
        return;
      }
      const str = (k: string): string | undefined => {
        const v = form.get(k);
        return typeof v === "string" ? v : undefined;
      };
      this.transcriptions.push({
        model: str("model") ?? "",
        ...(str("language") ? { language: str("language") } : {}),
        ...(str("response_format") ? { responseFormat: str("response_format") } : {}),
        fileName: (file as File).name ?? "",
        fileType: file.type,
        file: Buffer.from(await file.arrayBuffer()),
        auth,
      });
      const text =
        this.transcripts.length > 1 ? (this.transcripts.shift() ?? "") : (this.transcripts[0] ?? "");
      const model = str("model") ?? "";
      if (this.billing?.bills(model))
        this.billing.bill({
          id: `tr-fake${this.transcriptions.length}`,
          model,
          input: 0,
          cached: 0,
          output: 0,
          reasoning: 0,
          seconds: this.seconds,
        });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ text, usage: { type: "duration", seconds: this.seconds } }));
      return;
    }
    if (req.method === "POST" && url.pathname === "/v1/audio/speech") {
      const body = JSON.parse(raw.toString("utf8")) as Record<string, string>;
      this.speeches.push({
        model: body.model ?? "",
        voice: body.voice ?? "",
        input: body.input ?? "",
        ...(body.response_format ? { responseFormat: body.response_format } : {}),
        auth,
      });
      res.writeHead(200, { "content-type": "audio/ogg" });
      res.end(FAKE_SPEECH);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `Unknown request URL: ${req.method} ${url.pathname}` } }));
  }
}

/** Starts a fake audio server; `close()` it after the test. */
export function startFakeAudio(): Promise<FakeAudioServer> {
  return new FakeAudioServer().start();
}
