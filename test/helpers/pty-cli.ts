/**
 * Runs the real CLI under a pseudo-terminal (util-linux `script`), so stdin and stdout are a TTY as
 * at the owner's keyboard, and answers its questions as they appear: `answer` sees everything
 * printed so far and returns the line to type, or undefined to wait for more.
 */
import { spawn } from "node:child_process";
import { childEnv, cliCommand, type CliRun } from "./daemon.js";

export async function runCliInTerminal(
  args: string[],
  cwd: string,
  answer: (printed: string) => string | undefined,
): Promise<CliRun> {
  const cmd = [...cliCommand(), ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const child = spawn("script", ["-qec", cmd, "/dev/null"], {
    cwd,
    env: childEnv({ TERM: "dumb" }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => {
    stdout += b.toString();
    const line = answer(stdout);
    if (line !== undefined) child.stdin.write(`${line}\n`);
  });
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((res) => child.on("close", res));
  child.stdin.end();
  return { code, stdout, stderr };
}
