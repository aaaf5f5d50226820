/**
 * Issue 38: V8's code cache for the bundle lives only where the owner alone can write (it is code the
 * daemon runs). Unit tests of where it goes, then the real CLI: an owner-only cache fills, a planted
 * world-writable one or a symlink is never used.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compileCacheDir, ownerOnly } from "./compile-cache.js";
import { REPO_ROOT } from "../test/helpers/daemon.js";

const tmp = mkdtempSync(join(tmpdir(), "familiar-ccache-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("compileCacheDir", () => {
  it("is under XDG_CACHE_HOME, else ~/.cache, and only for absolute paths", () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: "/c", HOME: "/h" })).toBe("/c/familiar/compile-cache");
    expect(compileCacheDir({ HOME: "/h" })).toBe("/h/.cache/familiar/compile-cache");
    expect(compileCacheDir({ XDG_CACHE_HOME: "rel", HOME: "/h" })).toBe("/h/.cache/familiar/compile-cache");
    expect(compileCacheDir({ HOME: "rel" })).toBeNull();
    expect(compileCacheDir({})).toBeNull();
  });

  it("is off when the owner says so, and Node's own variable wins", () => {
    expect(compileCacheDir({ HOME: "/h", FAMILIAR_COMPILE_CACHE: "0" })).toBeNull();
    expect(compileCacheDir({ HOME: "/h", NODE_DISABLE_COMPILE_CACHE: "1" })).toBeNull();
    expect(compileCacheDir({ HOME: "/h", NODE_COMPILE_CACHE: "/elsewhere" })).toBeNull();
  });
});

describe.skipIf(process.platform !== "linux")("ownerOnly", () => {
  it("accepts an owner-only directory, refuses one others can write and a symlink", () => {
    const uid = process.getuid!();
    const own = join(tmp, "own");
    mkdirSync(own, { mode: 0o700 });
    expect(ownerOnly(own, uid)).toBe(true);
    const open = join(tmp, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    expect(ownerOnly(open, uid)).toBe(false);
    const link = join(tmp, "link");
    symlinkSync(own, link);
    expect(ownerOnly(link, uid)).toBe(false);
    expect(ownerOnly(own, uid + 1)).toBe(false);
  });
});

describe.skipIf(process.platform !== "linux")("the built CLI", () => {
  const bin = join(REPO_ROOT, "dist", "bundle", "familiar.js");
  const version = (home: string): void => {
    if (!existsSync(bin)) throw new Error(`${bin} missing: run npm run build`);
    const r = spawnSync(process.execPath, [bin, "--version"], {
      env: { PATH: process.env.PATH, HOME: home },
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
  };

  it("fills an owner-only cache in the owner's home", () => {
    const home = join(tmp, "home-ok");
    mkdirSync(home, { mode: 0o700 });
    version(home);
    const dir = join(home, ".cache", "familiar", "compile-cache");
    expect(ownerOnly(dir, process.getuid!())).toBe(true);
    expect(readdirSync(dir).length).toBeGreaterThan(0);
  });

  it("never uses a cache directory planted writable by others", () => {
    const home = join(tmp, "home-planted");
    const dir = join(home, ".cache", "familiar", "compile-cache");
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777);
    version(home);
    expect(readdirSync(dir)).toEqual([]);
  });
});
