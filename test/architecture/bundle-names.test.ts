/**
 * The bundle's name rule (cmd/bundle-keep-names.mjs): a library's classes keep their names when
 * esbuild renames them to avoid a clash in a chunk, and our own code carries no `__name` calls (they
 * ran once per closure per turn). A real esbuild build of a library under node_modules and an entry
 * that clashes with it, loaded and run.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterEach, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { keepLibraryNames } from "../../cmd/bundle-keep-names.mjs";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("library names in the bundle", () => {
  it("a library's class keeps its name through a clash; our closures are not wrapped", async () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-names-"));
    const lib = join(dir, "node_modules", "signal-lib");
    mkdirSync(lib, { recursive: true });
    writeFileSync(join(lib, "package.json"), JSON.stringify({ name: "signal-lib", main: "index.js" }));
    // As node-fetch and the abort-controller polyfill: the check is by name, not by identity.
    writeFileSync(
      join(lib, "index.js"),
      [
        "class AbortSignal {}",
        "function isSignal(s) { return s.constructor.name === 'AbortSignal'; }",
        "module.exports = { AbortSignal, isSignal };",
      ].join("\n"),
    );
    // Our code names the global AbortSignal too, so esbuild must rename one of the two.
    writeFileSync(
      join(dir, "entry.js"),
      [
        "import lib from 'signal-lib';",
        "const AbortSignal = globalThis.AbortSignal;",
        "const perTurn = () => (x) => x + 1;",
        "export const two = perTurn()(1);",
        "export const ok = lib.isSignal(new lib.AbortSignal());",
        "export const nativeStillThere = typeof AbortSignal.timeout === 'function';",
      ].join("\n"),
    );
    const out = join(dir, "out.mjs");
    await build({
      absWorkingDir: dir,
      entryPoints: [join(dir, "entry.js")],
      outfile: out,
      bundle: true,
      format: "esm",
      platform: "node",
      keepNames: false,
      logLevel: "silent",
      plugins: [keepLibraryNames],
    });
    const text = readFileSync(out, "utf8");
    expect(text).toMatch(/AbortSignal2/); // the clash happened
    const m = (await import(pathToFileURL(out).href)) as Record<string, unknown>;
    expect(m.ok).toBe(true);
    expect(m.nativeStillThere).toBe(true);
    expect(m.two).toBe(2);
    const ours = text.slice(text.indexOf("// entry.js"));
    expect(ours).not.toContain("__name");
  });
});
