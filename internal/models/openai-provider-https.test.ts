/**
 * The provider over https: a local TLS server with a self-signed certificate (test/fixtures/tls),
 * trusted through NODE_EXTRA_CA_CERTS as a user with a private CA would, and refused without it; and
 * through an HTTP proxy from HTTP_PROXY when NODE_USE_ENV_PROXY=1, as Node's fetch was.
 * Each call runs in a child process because Node reads that environment at start-up.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import { connect, type AddressInfo, type Socket } from "node:net";
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

async function callInChild(env: Record<string, string>, url = baseUrl): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", join(root, "test/fixtures/model-call.ts"), url],
    {
      cwd: root,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: "", NODE_USE_ENV_PROXY: "", HTTP_PROXY: "", ...env },
    },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, string>;
}

describe("openai provider over https and through a proxy", () => {
  it("streams from a server whose certificate the machine trusts", async () => {
    expect(await callInChild({ NODE_EXTRA_CA_CERTS: join(tls, "cert.pem") })).toEqual({ text: "over tls" });
  });

  it("refuses an untrusted certificate as unreachable, naming the reason", async () => {
    const r = await callInChild({});
    expect(r.code).toBe("MODEL_UNREACHABLE");
    expect(r.message).toContain("self-signed certificate");
  });

  it("goes through HTTP_PROXY when Node is told to use the proxy environment", async () => {
    const model = createHttpServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = { choices: [{ index: 0, delta: { content: "via proxy" }, finish_reason: "stop" }] };
        res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
      });
    });
    // A tunnelling proxy (CONNECT, as undici's proxy agent and fetch use) that sends every tunnel to
    // the local model server, whatever host was asked for.
    const tunnels: string[] = [];
    const proxy = createHttpServer();
    proxy.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
      tunnels.push(req.url ?? "");
      const upstream = connect((model.address() as AddressInfo).port, "127.0.0.1", () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    await new Promise<void>((r) => model.listen(0, "127.0.0.1", r));
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      const env = {
        NODE_USE_ENV_PROXY: "1",
        HTTP_PROXY: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      };
      expect(await callInChild(env, "http://model.invalid/v1")).toEqual({ text: "via proxy" });
      expect(tunnels).toEqual(["model.invalid:80"]);
    } finally {
      for (const s of [proxy, model]) {
        s.closeAllConnections();
        await new Promise<void>((r) => s.close(() => r()));
      }
    }
  });
});
