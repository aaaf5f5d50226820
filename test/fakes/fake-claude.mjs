#!/usr/bin/env node
// A fake `claude` CLI speaking Claude Code's stream-json protocol, for tests of the claude-cli engine.
// Reads user lines on stdin; replies per message. Directives in the user text:
//   TOOL      -> assistant tool_use, a tool_result, then the answer
//   ERROR     -> a result line with is_error true
//   CRASH     -> exits with code 3 before answering
//   MALFORMED -> prints a garbage line before answering
//   THINK     -> thinking deltas (partial mode) and a thinking block before the answer
//   ENV       -> the answer ends with its environment as JSON (` ENV={...}`)
//   READ:<p>  -> the answer ends with ` READ=<first 200 chars of p>` or ` READ-FAILED=<code>`
//   WRITE:<p> -> writes "planted" to p; the answer ends with ` WROTE` or ` WRITE-FAILED=<code>`
//   USERNS    -> tries `unshare -U true`; the answer ends with ` USERNS=<exit status>`
// Base64 image blocks are acknowledged in the answer as " [<media types>]".
// total_cost_usd on a result line is the running total of this process (as Claude Code reports it in
// stream-json mode): 0.002 per answered turn, 0.001 per error result.
// Session memory: turns per session id are kept in $FAKE_CLAUDE_STATE/<id>.json so `--resume <id>`
// continues the count across processes. Like the real CLI, a turn's transcript is flushed lazily: when
// the next message arrives or on a clean exit (stdin closed, SIGTERM). A process killed with SIGKILL
// leaves its last turn unflushed, and `--resume` of such a session (or of an unknown id) fails the way
// Claude Code does: "No conversation found with session ID: <id>" on stderr, a `result` line with
// subtype `error_during_execution` and no `init` line, exit code 1. Every invocation's argv is appended to $FAKE_CLAUDE_STATE/argv.log
// and its pid to $FAKE_CLAUDE_STATE/pids.log.
import { createInterface } from "node:readline";
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { spawnSync } from "node:child_process";

/** What the probing directives (ENV, READ:, WRITE:, USERNS) found, appended to the answer. */
function probe(text) {
  let extra = "";
  if (text.includes("ENV")) extra += ` ENV=${JSON.stringify(process.env)}`;
  const read = /READ:(\S+)/.exec(text);
  if (read) {
    try {
      extra += ` READ=${readFileSync(read[1], "utf8").slice(0, 200)}`;
    } catch (err) {
      extra += ` READ-FAILED=${err.code}`;
    }
  }
  const write = /WRITE:(\S+)/.exec(text);
  if (write) {
    try {
      writeFileSync(write[1], "planted");
      extra += " WROTE";
    } catch (err) {
      extra += ` WRITE-FAILED=${err.code}`;
    }
  }
  if (text.includes("USERNS")) extra += ` USERNS=${spawnSync("unshare", ["-U", "true"]).status}`;
  return extra;
}

const args = process.argv.slice(2);
const stateDir = process.env.FAKE_CLAUDE_STATE ?? "/tmp/fake-claude";
mkdirSync(stateDir, { recursive: true });
appendFileSync(join(stateDir, "argv.log"), JSON.stringify(args) + "\n");
appendFileSync(join(stateDir, "pids.log"), `${process.pid}\n`);
const resumeIdx = args.indexOf("--resume");
const sessionId = resumeIdx >= 0 ? args[resumeIdx + 1] : randomUUID();
const partial = args.includes("--include-partial-messages");
const modelIdx = args.indexOf("--model");
const model = modelIdx >= 0 ? args[modelIdx + 1] : "claude-sonnet-4-5";
const stateFile = join(stateDir, `${sessionId}.json`);
const saved = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : undefined;
let turns = saved?.turns ?? 0;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
if (resumeIdx >= 0 && (!saved || saved.unflushed)) {
  process.stderr.write(`No conversation found with session ID: ${sessionId}\n`);
  out({
    type: "result",
    subtype: "error_during_execution",
    is_error: true,
    num_turns: 0,
    session_id: sessionId,
    total_cost_usd: 0,
    usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  });
  process.exitCode = 1;
  process.stdout.end();
  process.stdin.destroy();
} else start();
/**
 * Writes the session's transcript state: `unflushed` until the next message or a clean exit. Written
 * to a temp file and renamed, so a process starting to resume never reads half a file.
 */
function save(unflushed) {
  const tmp = `${stateFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ turns, unflushed }));
  renameSync(tmp, stateFile);
}
/**
 * A clean exit flushes this process's last turn, unless another process has since continued the
 * session (a resumed successor started while this one was being stopped): it must not be clobbered.
 */
function flushAndExit(code) {
  let current;
  try {
    current = JSON.parse(readFileSync(stateFile, "utf8")).turns;
  } catch {
    current = undefined;
  }
  if (turns > 0 && current === turns) save(false);
  process.exit(code);
}
function start() {
  process.on("SIGTERM", () => flushAndExit(0));
  let costSoFar = 0;
  const addCost = (c) => (costSoFar = Math.round((costSoFar + c) * 1e6) / 1e6);

  out({
    type: "system",
    subtype: "init",
    session_id: sessionId,
    model,
    tools: ["Bash", "Read"],
    cwd: process.cwd(),
  });

  const rl = createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const blocks = msg?.message?.content ?? [];
    const images = blocks.filter((c) => c.type === "image" && c.source?.type === "base64" && c.source.data);
    const text =
      blocks.map((c) => c.text ?? "").join("") +
      (images.length ? ` [${images.map((c) => c.source.media_type).join(", ")}]` : "");
    if (turns > 0) save(false);
    appendFileSync(join(stateDir, "input.log"), JSON.stringify({ sessionId, text }) + "\n");
    if (text.includes("CRASH")) {
      process.stderr.write("fatal: simulated crash\n");
      process.exit(3);
    }
    if (text.includes("MALFORMED")) process.stdout.write("{this is not json\n");
    turns++;
    save(true);
    const usage = {
      input_tokens: 100 + turns,
      output_tokens: 20,
      cache_read_input_tokens: 50,
      cache_creation_input_tokens: 10,
    };
    if (text.includes("TOOL")) {
      out({
        type: "assistant",
        session_id: sessionId,
        message: {
          role: "assistant",
          content: [
            { type: "text", text: "Let me check." },
            { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } },
          ],
        },
      });
      out({
        type: "user",
        session_id: sessionId,
        message: {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "file.txt" }],
        },
      });
    }
    if (text.includes("ERROR")) {
      out({
        type: "result",
        subtype: "error_during_execution",
        is_error: true,
        result: "simulated failure",
        session_id: sessionId,
        usage,
        total_cost_usd: addCost(0.001),
        num_turns: 1,
      });
      return;
    }
    const answer = `turn ${turns} in ${sessionId}: ${text}${probe(text)}`;
    const thinking = text.includes("THINK") ? "Let me think about this." : "";
    if (partial && thinking) {
      for (const piece of thinking.match(/[\s\S]{1,8}/g) ?? []) {
        out({
          type: "stream_event",
          session_id: sessionId,
          event: {
            type: "content_block_delta",
            index: 0,
            delta: { type: "thinking_delta", thinking: piece },
          },
        });
      }
    }
    if (partial) {
      for (const piece of answer.match(/[\s\S]{1,8}/g) ?? []) {
        out({
          type: "stream_event",
          session_id: sessionId,
          event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } },
        });
      }
    }
    out({
      type: "assistant",
      session_id: sessionId,
      message: {
        role: "assistant",
        content: [...(thinking ? [{ type: "thinking", thinking }] : []), { type: "text", text: answer }],
      },
    });
    out({
      type: "result",
      subtype: "success",
      is_error: false,
      result: answer,
      session_id: sessionId,
      usage,
      total_cost_usd: addCost(0.002),
      num_turns: 1,
      modelUsage: { [model]: {} },
    });
  });
  rl.on("close", () => flushAndExit(0));
}
