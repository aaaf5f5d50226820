import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { mallocTrim } from "./malloc-trim.js";

const glibc = Boolean(
  (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
    ?.glibcVersionRuntime,
);

describe("mallocTrim", () => {
  it.runIf(process.platform === "linux" && glibc)(
    "on glibc it calls malloc_trim through koffi, again and again",
    () => {
      // Free a few MB of C heap first, so there is something to give back.
      const held: Buffer[] = Array.from({ length: 20_000 }, () => Buffer.allocUnsafeSlow(200));
      expect(held.length).toBe(20_000);
      held.length = 0;
      const first = mallocTrim();
      expect(first.unavailable).toBeUndefined();
      expect(typeof first.released).toBe("boolean");
      expect(mallocTrim().unavailable).toBeUndefined();
    },
  );

  it("where koffi cannot be loaded it is a no-op that says why, never an error", () => {
    // A child process in which `require("koffi")` throws, as on a platform without koffi's prebuilt
    // package (the hook is Node's own module loader, not a mock of ours).
    const script = `
      const Module = require("node:module");
      const orig = Module._load;
      Module._load = function (req, ...rest) {
        if (req === "koffi") throw new Error("no prebuilt koffi for this platform");
        return orig.call(this, req, ...rest);
      };
      import(${JSON.stringify(new URL("./malloc-trim.ts", import.meta.url).href)}).then((m) => {
        const a = m.mallocTrim();
        const b = m.mallocTrim();
        console.log(JSON.stringify({ a, b }));
      });
    `;
    const r = spawnSync(process.execPath, ["--import", "tsx", "-e", script], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const { a, b } = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as {
      a: { released: boolean; unavailable?: string };
      b: { released: boolean; unavailable?: string };
    };
    expect(a.released).toBe(false);
    expect(a.unavailable).toMatch(/malloc_trim|glibc|koffi/);
    expect(b).toEqual(a);
  });
});
