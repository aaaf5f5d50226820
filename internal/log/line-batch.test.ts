import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { batchedLines } from "./line-batch.js";

describe("batchedLines", () => {
  it("writes the lines of one event-loop turn in one write, in order", async () => {
    const writes: string[] = [];
    const emit = batchedLines({ write: (t: string) => writes.push(t) });
    emit("a\n");
    emit("b\n");
    emit("c\n");
    expect(writes).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(["a\nb\nc\n"]);
    emit("d\n");
    await new Promise((r) => setImmediate(r));
    expect(writes).toEqual(["a\nb\nc\n", "d\n"]);
  });

  it("writes what is pending when the process exits, even on process.exit and an uncaught error", () => {
    const mod = new URL("./line-batch.ts", import.meta.url).pathname;
    for (const ending of ["process.exit(3);", "throw new Error('boom');"]) {
      const script = `import { batchedLines } from ${JSON.stringify(mod)};
        const emit = batchedLines(process.stdout);
        emit("first\\n"); emit("last\\n"); ${ending}`;
      const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        encoding: "utf8",
      });
      expect(r.stdout).toBe("first\nlast\n");
      expect(r.status).not.toBe(0);
    }
  });
});
