/**
 * Issue 38: the daemon carries its own runtime settings however it is started. Unit tests of the plan,
 * then the real `familiar run` (sources through tsx, and the bundle) started with none of them: the
 * running daemon's /proc shows the flags and the malloc variables, and it is the very process the test
 * spawned (execve keeps the pid, so signals and exit codes need no forwarding).
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_HEAP_MB,
  HeapSettingError,
  heapMb,
  startsDaemon,
  TUNED_ENV,
  tuningPlan,
} from "./runtime-tuning.js";
import {
  REPO_ROOT,
  childEnv,
  cliCommand,
  startDaemonProcess,
  type DaemonProcess,
} from "../test/helpers/daemon.js";

describe("tuningPlan", () => {
  const bare = { args: ["run", "--config", "c.yaml"], execArgv: [], env: {} };

  it("adds every setting to a bare daemon start", () => {
    expect(tuningPlan(bare)).toEqual({
      flags: [`--max-old-space-size=${DEFAULT_HEAP_MB}`, "--max-semi-space-size=2"],
      env: { MALLOC_ARENA_MAX: "2", MALLOC_TRIM_THRESHOLD_: "131072" },
    });
  });

  it("never re-executes twice (the marker) and leaves short commands alone", () => {
    expect(tuningPlan({ ...bare, env: { [TUNED_ENV]: "1" } })).toBeNull();
    for (const args of [["status"], ["doctor"], ["--version"], ["-h"], ["cron", "list"], ["usage"]])
      expect(tuningPlan({ ...bare, args })).toBeNull();
    for (const args of [[], ["run"], ["--config", "x.yaml"], ["-c", "x.yaml"]])
      expect(startsDaemon(args)).toBe(true);
  });

  it("keeps what the owner set (flags, NODE_OPTIONS, malloc variables)", () => {
    expect(
      tuningPlan({
        ...bare,
        execArgv: ["--max-old-space-size=512"],
        env: { NODE_OPTIONS: "--max-semi-space-size=8", MALLOC_ARENA_MAX: "4" },
      }),
    ).toEqual({ flags: [], env: { MALLOC_TRIM_THRESHOLD_: "131072" } });
    expect(
      tuningPlan({
        ...bare,
        execArgv: ["--max-old-space-size=512", "--max-semi-space-size=8"],
        env: { MALLOC_ARENA_MAX: "4", MALLOC_TRIM_THRESHOLD_: "0" },
      }),
    ).toBeNull();
  });

  it("takes the heap cap from --heap-mb, then FAMILIAR_HEAP_MB; 0 removes the cap", () => {
    expect(heapMb(["run", "--heap-mb", "256"], { FAMILIAR_HEAP_MB: "128" })).toBe(256);
    expect(heapMb(["run", "--heap-mb=300"], {})).toBe(300);
    expect(heapMb(["run"], { FAMILIAR_HEAP_MB: "128" })).toBe(128);
    expect(tuningPlan({ ...bare, args: ["run", "--heap-mb", "0"] })?.flags).toEqual([
      "--max-semi-space-size=2",
    ]);
    expect(() => heapMb(["run", "--heap-mb", "lots"], {})).toThrow(HeapSettingError);
    expect(() => heapMb(["run"], { FAMILIAR_HEAP_MB: "8" })).toThrow(
      'FAMILIAR_HEAP_MB: expected a heap size in MB (32 or more, or 0 for no cap), got "8"',
    );
  });
});

const linux = process.platform === "linux";

describe.skipIf(!linux)("a daemon started plainly runs tuned", () => {
  let d: DaemonProcess | undefined;
  afterEach(async () => {
    await d?.cleanup();
    d = undefined;
  });

  const proc = (pid: number, file: string): string[] =>
    readFileSync(`/proc/${pid}/${file}`, "utf8").split("\0").filter(Boolean);

  for (const dist of [false, true]) {
    it(`${dist ? "the bundle" : "the sources"}: same pid, flags and malloc settings in place`, async () => {
      if (dist && !existsSync(join(REPO_ROOT, "dist/bundle/familiar.js")))
        throw new Error("dist/bundle/familiar.js missing: run npm run build");
      const before = process.env.FAMILIAR_TEST_DIST;
      process.env.FAMILIAR_TEST_DIST = dist ? "1" : "0";
      try {
        d = await startDaemonProcess({ env: { FAMILIAR_HEAP_MB: "128" } });
      } finally {
        if (before === undefined) delete process.env.FAMILIAR_TEST_DIST;
        else process.env.FAMILIAR_TEST_DIST = before;
      }
      const pid = d.child.pid!;
      const argv = proc(pid, "cmdline");
      expect(argv).toContain("--max-old-space-size=128");
      expect(argv).toContain("--max-semi-space-size=2");
      expect(argv.slice(-3)).toEqual(["run", "--config", d.configPath]);
      const env = proc(pid, "environ");
      expect(env).toEqual(
        expect.arrayContaining(["MALLOC_ARENA_MAX=2", "MALLOC_TRIM_THRESHOLD_=131072", `${TUNED_ENV}=1`]),
      );
      // The process the test holds answers SIGTERM with the daemon's own clean drain.
      expect(await d.stop()).toEqual({ code: 0, signal: null });
    });
  }

  it("a bad --heap-mb is refused in one line before the daemon starts", async () => {
    const [cmd, ...args] = cliCommand();
    const child = spawn(cmd!, [...args, "run", "--heap-mb", "lots", "--config", "nowhere.yaml"], {
      env: childEnv(),
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((res) => child.on("exit", res));
    expect(code).toBe(1);
    expect(stderr).toBe(
      'familiar: --heap-mb: expected a heap size in MB (32 or more, or 0 for no cap), got "lots"\n',
    );
  });
});
