/**
 * Limited downloads against a real HTTP server on 127.0.0.1: an announced size over the limit is
 * refused before the body, a body without a length is cut off once it passes the limit.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadLimited } from "./download.js";

let server: Server;
let base = "";
/** Chunks of the length-less body actually written before the client went away. */
let chunkedWritten = 0;
let chunkedClosed: Promise<void> = Promise.resolve();

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/ok") return void res.end(Buffer.from("hello"));
    if (req.url === "/announced") {
      res.writeHead(200, { "content-length": "5000" });
      return void res.end(Buffer.alloc(5000));
    }
    if (req.url === "/chunked") {
      // No content-length: 100 chunks of 1 KB, one per tick, while the client listens.
      res.writeHead(200, { "transfer-encoding": "chunked" });
      chunkedClosed = new Promise((r) => res.on("close", () => r()));
      let i = 0;
      const next = (): void => {
        if (res.destroyed || i++ >= 100) return void res.end();
        chunkedWritten++;
        res.write(Buffer.alloc(1024), () => setImmediate(next));
      };
      return next();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("downloadLimited", () => {
  it("returns the bytes within the limit", async () => {
    expect(await downloadLimited(`${base}/ok`, 5, { source: "Discord" })).toEqual(Buffer.from("hello"));
  });

  it("refuses an announced size over the limit", async () => {
    await expect(downloadLimited(`${base}/announced`, 1000, { source: "Discord" })).rejects.toMatchObject({
      code: "MEDIA_TOO_LARGE",
      message: "The file is too large (0.0 MB; the limit is 0.0 MB).",
    });
  });

  it("stops reading a body without a length once it passes the limit", async () => {
    await expect(downloadLimited(`${base}/chunked`, 3000, { source: "Discord" })).rejects.toMatchObject({
      code: "MEDIA_TOO_LARGE",
    });
    // The client went away long before the 100th chunk.
    await chunkedClosed;
    expect(chunkedWritten).toBeLessThan(100);
  });

  it("names the platform when the download fails", async () => {
    await expect(downloadLimited(`${base}/gone`, 1000, { source: "Discord" })).rejects.toMatchObject({
      code: "MEDIA_PROVIDER_FAILED",
      message: "Downloading the file from Discord failed (404).",
    });
  });
});
