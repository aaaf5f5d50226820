/**
 * An MCP server that never finishes starting (issue 46 item 5): it never answers `initialize`, never
 * reads stdin, and starts a child of its own, as `npx` starts `node`. It writes its pid and the
 * child's to `<argv[2]>/pids` (JSON), so a test can check that neither outlives the daemon.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
writeFileSync(join(dir, "pids"), JSON.stringify({ server: process.pid, child: child.pid }));
process.stdin.pause();
setInterval(() => {}, 1000);
