import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without type declarations
import { builtinsWithoutNamespace } from "../../cmd/bundle-builtins.mjs";

const dir = mkdtempSync(join(tmpdir(), "familiar-builtins-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Bundles `source` as cmd/bundle.mjs does (with or without the plugin) and runs it; returns its stdout. */
async function bundleAndRun(source: string, withPlugin: boolean): Promise<string> {
  const entry = join(dir, `entry-${withPlugin}.ts`);
  const out = join(dir, `out-${withPlugin}.mjs`);
  writeFileSync(entry, source);
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    format: "esm",
    platform: "node",
    logLevel: "silent",
    plugins: withPlugin ? [builtinsWithoutNamespace] : [],
  });
  return execFileSync(process.execPath, [out], { encoding: "utf8" });
}

const probe = `
import { createServer } from "node:http";
import http from "node:http";
import { randomUUID } from "node:crypto";
import { AsyncLocalStorage } from "node:async_hooks";
const loaded = process.moduleLoadList.filter((m) => /undici|http2|webcrypto/.test(m));
console.log(JSON.stringify({
  loaded,
  server: typeof createServer,
  same: http.createServer === createServer,
  uuid: randomUUID().length,
  als: typeof AsyncLocalStorage,
  ws: typeof http.WebSocket,
}));`;

describe("bundled built-in imports", () => {
  it("an ESM import of node:http loads undici and http2 without the plugin (why it exists)", async () => {
    const r = JSON.parse(await bundleAndRun(probe, false)) as { loaded: string[] };
    expect(r.loaded.join(" ")).toMatch(/undici/);
  });

  it("with the plugin the same imports work and load none of them until asked", async () => {
    const r = JSON.parse(await bundleAndRun(probe, true)) as Record<string, unknown>;
    expect(r).toEqual({
      loaded: [],
      server: "function",
      same: true,
      uuid: 36,
      als: "function",
      ws: "function",
    });
  });

  it("importing a skipped getter by name fails the build instead of changing silently", async () => {
    await expect(
      bundleAndRun(`import { WebSocket } from "node:http"; console.log(typeof WebSocket);`, true),
    ).rejects.toThrow(/No matching export/);
  });
});
