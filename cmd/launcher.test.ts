/**
 * Issue 38: the bin (`dist/bundle/familiar.js`) starts as a sh script (cmd/launcher.sh) that applies
 * the daemon's runtime settings before Node starts, so `familiar run` costs one Node start, not two.
 *
 * 1. The sh part decides as tuningPlan() does, under every sh at hand (dash, BusyBox ash, bash): a
 *    `node` of the test's own on PATH records what it was started with, for a table of arguments and
 *    environments.
 * 2. The real daemon started through the built bin (as an executable, and under dash and BusyBox sh)
 *    runs under the heap cap (its /metrics shows V8's limit) after ONE Node start, counted by a
 *    NODE_OPTIONS preload; `node dist/bundle/familiar.js run` gets the same cap through the re-exec
 *    (two starts, same pid).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { HeapSettingError, tuningPlan } from "./runtime-tuning.js";
import { REPO_ROOT, startDaemonProcess, type DaemonProcess } from "../test/helpers/daemon.js";

const linux = process.platform === "linux";
const LAUNCHER = join(REPO_ROOT, "cmd", "launcher.sh");
const BIN = join(REPO_ROOT, "dist", "bundle", "familiar.js");

/** The shells to try: the system sh always, dash and BusyBox when installed. */
function shells(): { name: string; argv: string[] }[] {
  const out = [{ name: "/bin/sh", argv: ["/bin/sh"] }];
  const has = (cmd: string): boolean => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
  if (has("dash")) out.push({ name: "dash", argv: ["dash"] });
  if (has("busybox")) out.push({ name: "busybox sh", argv: ["busybox", "sh"] });
  if (has("bash")) out.push({ name: "bash --posix", argv: ["bash", "--posix"] });
  return out;
}

const tmp = mkdtempSync(join(tmpdir(), "familiar-launcher-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(!linux)("the launcher's sh decides as tuningPlan() does", () => {
  // A `node` that records its arguments and the settings it was given, then exits.
  const fakeBin = join(tmp, "bin");
  const record = join(tmp, "record");
  spawnSync("mkdir", ["-p", fakeBin]);
  writeFileSync(
    join(fakeBin, "node"),
    `#!/bin/sh\n{ for a do printf 'arg %s\\n' "$a"; done; env | grep -E '^(MALLOC_|FAMILIAR_TUNED=)' | sed 's/^/env /'; } > "${record}"\n`,
  );
  chmodSync(join(fakeBin, "node"), 0o755);

  interface Started {
    flags: string[];
    env: Record<string, string>;
  }
  const run = (sh: string[], args: string[], env: Record<string, string>): Started => {
    rmSync(record, { force: true });
    const r = spawnSync(sh[0]!, [...sh.slice(1), LAUNCHER, ...args], {
      env: { PATH: `${fakeBin}${delimiter}/usr/bin${delimiter}/bin`, ...env },
    });
    expect(r.status, r.stderr.toString()).toBe(0);
    const lines = readFileSync(record, "utf8").split("\n").slice(0, -1);
    const argv = lines.filter((l) => l.startsWith("arg ")).map((l) => l.slice(4));
    const at = argv.indexOf(LAUNCHER);
    expect(argv.slice(at + 1)).toEqual(args);
    const seen = Object.fromEntries(
      lines.filter((l) => l.startsWith("env ")).map((l) => l.slice(4).split("=", 2) as [string, string]),
    );
    const added = Object.fromEntries(Object.entries(seen).filter(([k, v]) => env[k] !== v));
    return { flags: argv.slice(0, at), env: added };
  };

  const cases: { args: string[]; env?: Record<string, string>; leftToJs?: boolean }[] = [
    { args: ["run", "--config", "c.yaml"] },
    { args: [] },
    { args: ["--config", "c.yaml"] },
    { args: ["--version"] },
    { args: ["-h"] },
    { args: ["doctor", "--config", "c.yaml"] },
    { args: ["chat", "run"] },
    { args: [""] },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "128" } },
    { args: ["run", "--heap-mb", "256"], env: { FAMILIAR_HEAP_MB: "128" } },
    { args: ["run", "--heap-mb=300"] },
    { args: ["run", "--heap-mb", "0"] },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "0" } },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "1048576" } },
    { args: ["run", "--heap-mb", "--heap-mb=64"] },
    // Odd values: the sh part starts Node plainly and leaves the verdict to the JS side.
    { args: ["run", "--heap-mb", "lots"] },
    { args: ["run", "--heap-mb"] },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "8" } },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "" } },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "1048577" } },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "99999999999999999999" } },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: " 128" }, leftToJs: true },
    { args: ["run"], env: { FAMILIAR_HEAP_MB: "0128" }, leftToJs: true },
    // What the owner set wins.
    { args: ["run"], env: { NODE_OPTIONS: "--max-old-space-size=512" } },
    { args: ["run"], env: { NODE_OPTIONS: "--enable-source-maps --max-semi-space-size 8" } },
    { args: ["run"], env: { NODE_OPTIONS: "--trace-warnings\t--max-old-space-size=300" } },
    { args: ["run"], env: { NODE_OPTIONS: "--max-old-space-sizes=1" } },
    { args: ["run"], env: { MALLOC_ARENA_MAX: "4", MALLOC_TRIM_THRESHOLD_: "" } },
    { args: ["run"], env: { FAMILIAR_TUNED: "1" } },
    { args: ["run", "a b", "*", "$HOME"] },
  ];

  for (const sh of shells())
    it(`under ${sh.name}`, () => {
      for (const c of cases) {
        const env = c.env ?? {};
        const got = run(sh.argv, c.args, env);
        const label = JSON.stringify(c);
        let plan: ReturnType<typeof tuningPlan> | "refused";
        try {
          plan = tuningPlan({ args: c.args, execArgv: [], env });
        } catch (err) {
          expect(err, label).toBeInstanceOf(HeapSettingError);
          plan = "refused";
        }
        if (plan === "refused" || c.leftToJs) {
          // Started plainly: the JS side re-executes or prints the one-line refusal.
          expect(got, label).toEqual({ flags: [], env: {} });
        } else if (plan === null) {
          expect(got.flags, label).toEqual([]);
          expect(
            Object.keys(got.env).filter((k) => k !== "FAMILIAR_TUNED"),
            label,
          ).toEqual([]);
        } else {
          expect(got, label).toEqual({ flags: plan.flags, env: { ...plan.env, FAMILIAR_TUNED: "1" } });
        }
      }
    });
});

describe.skipIf(!linux)("the built bin runs the daemon tuned after one Node start", () => {
  let d: DaemonProcess | undefined;
  afterEach(async () => {
    await d?.cleanup();
    d = undefined;
  });
  const preload = join(tmp, "count-starts.cjs");
  writeFileSync(preload, `require("node:fs").appendFileSync(process.env.START_LOG, process.pid + "\\n");\n`);

  /** Starts the daemon with `command`, returns [Node starts, V8 heap limit in MB, the process's env]. */
  const start = async (name: string, command: string[]): Promise<[number, number, string[]]> => {
    if (!existsSync(BIN)) throw new Error(`${BIN} missing: run npm run build`);
    const log = join(tmp, `starts-${name.replace(/\W/g, "_")}`);
    d = await startDaemonProcess({
      command,
      timeoutMs: 60_000,
      env: {
        // The launcher finds `node` on PATH, as `#!/usr/bin/env node` did: this Node 22.
        PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`,
        NODE_OPTIONS: `--require ${preload}`,
        START_LOG: log,
      },
    });
    const metrics = await (await fetch(`${d.url}/metrics`, { headers: d.headers() })).text();
    const limit = /^nodejs_heap_size_limit_bytes (\d+)$/m.exec(metrics);
    expect(limit, metrics).not.toBeNull();
    const pids = readFileSync(log, "utf8").trim().split("\n");
    expect(new Set(pids)).toEqual(new Set([String(d.child.pid)]));
    const env = readFileSync(`/proc/${d.child.pid}/environ`, "utf8").split("\0");
    return [pids.length, Number(limit![1]) / 2 ** 20, env];
  };

  const direct = [{ name: "the bin as an executable", command: [BIN] }].concat(
    shells()
      .filter((s) => s.name !== "/bin/sh")
      .map((s) => ({ name: `sh = ${s.name}`, command: [...s.argv, BIN] })),
  );
  for (const { name, command } of direct)
    it(`${name}: one start, heap cap and malloc settings in place`, async () => {
      const [starts, limitMB, env] = await start(name, command);
      expect(starts).toBe(1);
      // 96 MB old space plus the young generation; an uncapped V8 here allows 2 GB or more.
      expect(limitMB).toBeGreaterThan(90);
      expect(limitMB).toBeLessThan(120);
      expect(env).toEqual(
        expect.arrayContaining(["MALLOC_ARENA_MAX=2", "MALLOC_TRIM_THRESHOLD_=131072", "FAMILIAR_TUNED=1"]),
      );
      expect(await d!.stop()).toEqual({ code: 0, signal: null });
    });

  it("node dist/bundle/familiar.js run: the same cap through the re-exec (two starts, one pid)", async () => {
    const [starts, limitMB, env] = await start("node", [process.execPath, BIN]);
    expect(starts).toBe(2);
    expect(limitMB).toBeGreaterThan(90);
    expect(limitMB).toBeLessThan(120);
    expect(env).toEqual(expect.arrayContaining(["MALLOC_ARENA_MAX=2", "FAMILIAR_TUNED=1"]));
  });
});
