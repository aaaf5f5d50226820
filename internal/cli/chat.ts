/**
 * `familiar chat`: a terminal chat over the gateway websocket. Streams replies as they arrive, sends
 * slash commands like any message (the daemon handles them), Ctrl-C aborts the running turn and a
 * second Ctrl-C exits. With piped stdin it sends one message per line, each after the previous
 * reply, and exits after the last reply at EOF.
 */
import { createInterface } from "node:readline";
import { GatewayClient, GatewayClientError } from "../gateway/client.js";
import type { ChatEventPayload } from "../gateway/chat-events.js";
import { resolveGatewayTarget } from "../gateway/target.js";

export interface ChatOptions {
  config: string;
  session?: string;
  agent?: string;
  url?: string;
  token?: string;
}

interface Waiter {
  runId: string | undefined;
  done: () => void;
  streamed: boolean;
}

export async function chatCommand(opts: ChatOptions): Promise<void> {
  const target = resolveGatewayTarget(opts);
  const tty = process.stdin.isTTY === true;
  const out = process.stdout;
  let client: GatewayClient;
  try {
    client = await GatewayClient.connect({
      url: target.url,
      token: target.token,
      clientName: "familiar-chat",
    });
  } catch (err) {
    const e = err as GatewayClientError;
    process.stderr.write(
      `familiar chat: ${e.message}${e.code === "GATEWAY_UNREACHABLE" ? " (is the daemon running? start it with `familiar run`)" : ""}\n`,
    );
    process.exitCode = 1;
    return;
  }
  const agent = opts.agent ?? String(client.hello.defaultAgent ?? "main");
  const name = opts.session ?? "cli";
  // The bare name goes to the server, which resolves it (an `/agent` choice can change the agent).
  let sessionKey = name.includes(":") ? name : `agent:${agent}:gateway:${name}`;
  const sessionParam = name;
  let waiter: Waiter | undefined;
  let exiting = false;

  // Events can arrive before the chat.send response names the run; they wait here until it does.
  let early: ChatEventPayload[] = [];
  const onChat = (p: ChatEventPayload): void => {
    const w = waiter;
    if (!w) return;
    if (!w.runId) {
      early.push(p);
      return;
    }
    if (p.runId !== w.runId) return;
    switch (p.state) {
      case "delta":
        w.streamed = true;
        out.write(p.delta);
        break;
      case "tool":
        if (tty && p.phase === "start") out.write(`\n\x1b[2m[${p.name}]\x1b[0m\n`);
        break;
      case "notice":
        if (tty) out.write(`\n\x1b[2m(${p.text})\x1b[0m\n`);
        break;
      case "final":
        if (!w.streamed) out.write(p.text);
        out.write("\n");
        w.done();
        break;
      case "aborted":
        out.write(`${w.streamed ? "\n" : ""}[stopped]\n`);
        w.done();
        break;
      case "error":
        if (w.streamed) out.write("\n");
        process.stderr.write(`error: ${p.message}\n`);
        w.done();
        break;
      default:
        break;
    }
  };
  client.on("chat", (raw) => onChat(raw as ChatEventPayload));
  client.onClose((_code, reason) => {
    if (exiting) return;
    process.stderr.write(`\nfamiliar chat: connection closed${reason ? `: ${reason}` : ""}\n`);
    process.exit(1);
  });

  const send = async (text: string): Promise<void> => {
    await new Promise<void>((resolve) => {
      const w: Waiter = { runId: undefined, streamed: false, done: () => ((waiter = undefined), resolve()) };
      waiter = w;
      early = [];
      client
        .request<{ runId: string; sessionKey: string }>("chat.send", {
          sessionKey: sessionParam,
          message: text,
          ...(opts.agent ? { agent: opts.agent } : {}),
          idempotencyKey: `cli-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`,
        })
        .then(
          (r) => {
            w.runId = r.runId;
            sessionKey = r.sessionKey;
            const buffered = early;
            early = [];
            for (const e of buffered) onChat(e);
          },
          (err: Error) => {
            process.stderr.write(`error: ${err.message}\n`);
            w.done();
          },
        );
    });
  };

  const rl = createInterface({ input: process.stdin, output: tty ? out : undefined, terminal: tty });
  let interrupts = 0;
  const onInterrupt = (): void => {
    if (waiter && interrupts === 0) {
      interrupts++;
      out.write("\n(aborting; Ctrl-C again to exit)\n");
      void client.request("chat.abort", { sessionKey }).catch(() => undefined);
      return;
    }
    exiting = true;
    out.write("\n");
    void client.close().then(() => process.exit(130));
  };
  rl.on("SIGINT", onInterrupt);
  process.on("SIGINT", onInterrupt);

  if (tty) out.write(`familiar chat: session ${sessionKey} (Ctrl-C aborts a reply, Ctrl-D or /exit quits)\n`);
  const prompt = (): void => {
    if (tty) {
      rl.setPrompt("you> ");
      rl.prompt();
    }
  };
  prompt();
  for await (const line of rl) {
    const text = line.trim();
    if (!text) {
      prompt();
      continue;
    }
    if (text === "/exit" || text === "/quit") break;
    interrupts = 0;
    await send(text);
    prompt();
  }
  exiting = true;
  rl.close();
  process.off("SIGINT", onInterrupt);
  await client.close();
}
