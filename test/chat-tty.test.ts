/**
 * `familiar chat` on a real terminal (a pseudo-terminal from util-linux `script`): Ctrl-D on the
 * `you>` line ends with a newline, so the shell prompt does not glue onto it.
 */
import { execFileSync, spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { childEnv, cleanupDaemons, cliCommand, startDaemonProcess } from "./helpers/daemon.js";

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

afterAll(async () => {
  await cleanupDaemons();
});

const quote = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;

describe.skipIf(!hasScript)("familiar chat on a terminal", () => {
  it("Ctrl-D ends the session with a newline after the prompt", async () => {
    const d = await startDaemonProcess();
    const cmd = [...cliCommand(), "chat", "--config", d.configPath].map(quote).join(" ");
    const child = spawn("script", ["-qec", cmd, "/dev/null"], {
      cwd: d.dir,
      env: childEnv({ TERM: "dumb" }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    const seen: ((s: string) => void)[] = [];
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      for (const f of seen) f(out);
    });
    const waitFor = (pred: (s: string) => boolean): Promise<void> =>
      new Promise((res) => {
        if (pred(out)) return res();
        seen.push((s) => pred(s) && res());
      });
    const prompts = (s: string): number => s.split("you> ").length - 1;
    await waitFor((s) => prompts(s) >= 1);
    child.stdin.write("hello\r");
    await waitFor((s) => s.includes("echo: hello") && prompts(s) >= 2);
    child.stdin.write("\x04");
    const code = await new Promise<number | null>((res) => child.on("close", res));
    expect(code).toBe(0);
    // After the last prompt (and any cursor escapes the line editor wrote) comes the newline.
    const tail = out.slice(out.lastIndexOf("you> ") + "you> ".length);
    // eslint-disable-next-line no-control-regex -- the terminal's ANSI escapes are what is stripped
    expect(tail.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "")).toMatch(/^\r?\n$/);
  }, 60_000);
});
