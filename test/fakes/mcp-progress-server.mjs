/**
 * A stdio MCP server for the call-limit tests (issue 46 item 5), paced by the test through files so
 * that no step depends on wall-clock time. Tool `work` {steps, tag}: for each step i it waits for
 * `<STEP_DIR>/<tag>/go-<i>`, reports progress i (when the client sent a progress token), pings the
 * client (whose answer proves it handled the progress first: stdio keeps order) and writes
 * `sent-<i>`; then it waits for `finish` and answers. `token` records the progress token it got.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const root = process.env.STEP_DIR;
if (!root) throw new Error("STEP_DIR is not set");
const waitFile = async (p) => {
  while (!existsSync(p)) await new Promise((r) => setTimeout(r, 10));
};

const server = new McpServer({ name: "progress", version: "1.0.0" });
server.registerTool(
  "work",
  { description: "Works in steps the test paces", inputSchema: { steps: z.number(), tag: z.string() } },
  async ({ steps, tag }, extra) => {
    const dir = join(root, tag);
    mkdirSync(dir, { recursive: true });
    const token = extra._meta?.progressToken;
    writeFileSync(join(dir, "token"), JSON.stringify(token ?? null));
    for (let i = 1; i <= steps; i++) {
      await waitFile(join(dir, `go-${i}`));
      if (token !== undefined)
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps },
        });
      await server.server.ping();
      writeFileSync(join(dir, `sent-${i}`), "");
    }
    await waitFile(join(dir, "finish"));
    return { content: [{ type: "text", text: `done ${steps}` }] };
  },
);
await server.connect(new StdioServerTransport());
