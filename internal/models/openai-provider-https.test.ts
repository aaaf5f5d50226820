/**
 * The provider over https: a local TLS server with a self-signed certificate (test/fixtures/tls),
 * trusted through NODE_EXTRA_CA_CERTS as a user with a private CA would, and refused without it.
 * The call runs in a child process because Node reads NODE_EXTRA_CA_CERTS at start-up only.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const tls = join(root, "test/fixtures/tls");
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer(
    { cert: readFileSync(join(tls, "cert.pem")), key: readFileSync(join(tls, "key.pem")) },
    (req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = { choices: [{ index: 0, delta: { content: "over tls" }, finish_reason: "stop" }] };
        res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

async function callInChild(env: Record<string, string>): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", join(root, "test/fixtures/model-call.ts"), baseUrl],
    { cwd: root, env: { ...process.env, NODE_EXTRA_CA_CERTS: "", ...env } },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, string>;
}

describe("openai provider over https", () => {
  it("streams from a server whose certificate the machine trusts", async () => {
    expect(await callInChild({ NODE_EXTRA_CA_CERTS: join(tls, "cert.pem") })).toEqual({ text: "over tls" });
  });

  it("refuses an untrusted certificate as unreachable, naming the reason", async () => {
    const r = await callInChild({});
    expect(r.code).toBe("MODEL_UNREACHABLE");
    expect(r.message).toContain("self-signed certificate");
  });
});
