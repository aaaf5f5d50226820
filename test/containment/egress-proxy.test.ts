/**
 * The one door out of the sandbox: with `tools.exec.sandbox.network: true` a command has no network
 * of its own (real bubblewrap, `--unshare-net`) and reaches hosts only through the daemon's egress
 * proxy, which asks the containment gate for every connection. Real curl, real sockets on 127.0.0.1.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../internal/tools/sandbox/sandbox-probe.js";
import { ToolError } from "../../internal/tools/tool.js";
import { createToolsHarness, type ToolsHarness } from "../tools/harness.js";
import { startFakeSite, type FakeSite } from "./fake-site.js";

let site: FakeSite;
let h: ToolsHarness | undefined;
const canSandbox = (await probeSandbox()).ok;

beforeAll(async () => {
  site = await startFakeSite();
});
afterAll(async () => {
  await site.close();
});
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup(web: Record<string, unknown> = { allow_hosts: ["127.0.0.1"] }): Promise<ToolsHarness> {
  h = await createToolsHarness({ tools: { web, exec: { sandbox: { network: true }, timeout_s: 60 } } });
  return h;
}

describe.skipIf(!canSandbox)("sandbox network through the egress proxy", () => {
  it("an allowed host is reached through the proxy, and the gate saw it", async () => {
    const t = await setup();
    const asked: string[] = [];
    const r = await t.call(
      "exec",
      { command: `curl -sS ${site.url}/ok?via=proxy` },
      { ctx: { egress: async (u: URL) => void asked.push(u.host) } },
    );
    expect(r.content).toContain("ok");
    expect(site.hits).toContain("/ok?via=proxy");
    expect(asked).toEqual([site.url.replace("http://", "")]);
  }, 60_000);

  it("an IPv6 literal reaches the gate as a valid URL and the host behind it (issue 46)", async () => {
    const site6 = await startFakeSite("::1");
    try {
      const t = await setup({ allow_hosts: ["::1"] });
      const asked: string[] = [];
      const r = await t.call(
        "exec",
        { command: `curl -sS -g ${site6.url}/ok?via=v6` },
        { ctx: { egress: async (u: URL) => void asked.push(u.host) } },
      );
      expect(r.content).not.toContain("Invalid URL");
      expect(r.content).toContain("ok");
      expect(site6.hits).toContain("/ok?via=v6");
      expect(asked).toEqual([site6.url.replace("http://", "")]);
    } finally {
      await site6.close();
    }
  }, 60_000);

  it("a refused host gets a 403 and nothing reaches it", async () => {
    const t = await setup();
    const before = site.hits.length;
    const r = await t.call(
      "exec",
      { command: `curl -sS ${site.url}/nope; echo; curl -sS https://example.invalid/ 2>&1 | head -c 300` },
      {
        ctx: {
          egress: async (u: URL) => {
            throw new ToolError("EGRESS_REFUSED", `refused: ${u.hostname} is not allowed`);
          },
        },
      },
    );
    expect(r.content).toContain("familiar egress proxy: refused");
    expect(site.hits.length).toBe(before);
  }, 60_000);

  it("going around the proxy finds no network at all", async () => {
    const t = await setup();
    const before = site.hits.length;
    const r = await t.call("exec", {
      command: `curl -sS --noproxy '*' --max-time 5 ${site.url}/direct; echo rc=$?`,
    });
    expect(r.content).toMatch(/rc=[1-9]/);
    expect(site.hits.length).toBe(before);
  }, 60_000);

  it("private addresses stay refused unless tools.web allows them", async () => {
    const t = await setup({});
    const r = await t.call(
      "exec",
      { command: `curl -sS ${site.url}/private` },
      { ctx: { egress: async () => undefined } },
    );
    expect(r.content).toMatch(/refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1, a private/);
    expect(site.hits).not.toContain("/private");
  }, 60_000);
});
