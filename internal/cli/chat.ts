/**
 * `familiar chat`: a terminal chat over the gateway websocket. Streams replies as they arrive, sends
 * slash commands like any message (the daemon handles them), Ctrl-C aborts the running turn and a
 * second Ctrl-C exits. With piped stdin it sends one message per line, each after the previous
 * reply, and exits after the last reply at EOF.
 *
 * Input is read while a turn runs: `/approve <id>` and `/deny <id>` typed then settle the approval the
 * turn waits for at once (over `approvals.resolve`), `/stop` aborts it; any other line waits for the
 * reply and is sent next.
 *
 * A daemon restart does not end the chat: the connection comes back (chat-connection.ts) on the same
 * session. Each line carries one idempotency key (scoped to the session by the gateway) and is
 * re-sent with it until the gateway answers, so a line typed while disconnected goes out after the
 * reconnect, and a line whose answer was cut off is neither lost nor run twice.
 *
 * Over 300 lines on purpose: `chatCommand` is one closure over the live terminal session (the turn
 * being waited on, the input queue, the session key, the Ctrl-C count) that all its handlers share;
 * the connection and its reconnects are already apart in chat-connection.ts.
 */
import { safeLine, safeText } from "./terminal-text.js";
import { createInterface } from "node:readline";
import { GatewayClient, GatewayClientError } from "../gateway/client.js";
import { ReconnectingGateway } from "./chat-connection.js";
import type { ChatEventPayload } from "../gateway/chat-events.js";
import { resolveGatewayTarget } from "../gateway/target.js";

export interface ChatOptions {
  config: string;
  /** After each reply, print its request id (for `familiar trace`). */
  verbose?: boolean;
  session?: string;
  agent?: string;
  url?: string;
  token?: string;
}

interface Waiter {
  /** The line's idempotency key: every retry of this line uses it. */
  key: string;
  message: string;
  /** Set once a chat.send for this line went out on an open socket. */
  attempted: boolean;
  runId: string | undefined;
  requestId?: string;
  done: () => void;
  /** Reply text printed so far (deltas). */
  streamed: string;
}

/** What chat.send answers (see docs/gateway-protocol.md). */
interface SendAnswer {
  runId: string;
  /** The turn's request id (daemons before this field leave it out). */
  requestId?: string;
  sessionKey: string;
  status: "started" | "done";
  duplicate?: boolean;
  result?: { text?: string; finishReason?: string; error?: { message: string } };
}

export async function chatCommand(opts: ChatOptions): Promise<void> {
  const target = resolveGatewayTarget(opts);
  const tty = process.stdin.isTTY === true;
  const out = process.stdout;
  const open = (): Promise<GatewayClient> =>
    GatewayClient.connect({
      url: target.url,
      token: target.token,
      clientName: "familiar-chat",
      role: "owner",
    });
  let first: GatewayClient;
  try {
    first = await open();
  } catch (err) {
    const e = err as GatewayClientError;
    process.stderr.write(
      `familiar chat: ${e.message}${e.code === "GATEWAY_UNREACHABLE" ? " (is the daemon running? start it with `familiar run`)" : ""}\n`,
    );
    process.exitCode = 1;
    return;
  }
  const notify = (line: string): void => void process.stderr.write(`\n${line}\n`);
  const client = new ReconnectingGateway(first, {
    connect: open,
    notify,
    onReconnected: () => {
      const w = waiter;
      // A new connection shows this session again, so a reminder asked here still reaches it.
      watch();
      if (w?.runId !== undefined) void reattach(w);
      else if (!w) prompt();
    },
    onGiveUp: (message) => {
      process.stderr.write(`familiar chat: ${message}\n`);
      process.exit(1);
    },
  });
  const agent = opts.agent ?? String(client.hello.defaultAgent ?? "main");
  const name = opts.session ?? "cli";
  // The bare name goes to the server, which resolves it (an `/agent` choice can change the agent).
  let sessionKey = name.includes(":") ? name : `agent:${agent}:gateway:${name}`;
  const sessionParam = name;
  let waiter: Waiter | undefined;

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
        w.streamed += p.delta;
        // The model's text can be steered by strangers (prompt injection): no escapes reach the tty.
        out.write(safeText(p.delta));
        break;
      case "tool":
        if (tty && p.phase === "start") out.write(`\n\x1b[2m[${safeLine(p.name)}]\x1b[0m\n`);
        break;
      case "notice":
        if (tty) out.write(`\n\x1b[2m(${safeText(p.text)})\x1b[0m\n`);
        break;
      case "final":
        if (!w.streamed) out.write(safeText(p.text));
        out.write("\n");
        w.done();
        break;
      case "aborted":
        out.write(`${w.streamed ? "\n" : ""}[stopped]\n`);
        w.done();
        break;
      case "error":
        if (w.streamed) out.write("\n");
        process.stderr.write(`error: ${safeText(p.message)}\n`);
        w.done();
        break;
      default:
        break;
    }
  };
  client.on("chat", (raw) => onChat(raw as ChatEventPayload));
  // A reminder asked in this session (the agent's cron tool) comes back here when it runs.
  client.on("reminder", (raw) => {
    const r = raw as { sessionKey?: unknown; jobId?: unknown; text?: unknown };
    if (typeof r.text !== "string" || r.sessionKey !== sessionKey) return;
    // Scheduled text can carry a stranger's words (a fetched page): no escapes reach the tty.
    out.write(`\n[reminder ${safeLine(String(r.jobId))}] ${safeText(r.text)}\n`);
    if (!waiter) prompt();
  });
  /** Tells the daemon this connection shows the session (chat.history is how a client opens one). */
  const watch = (): void => {
    void client
      .request("chat.history", {
        sessionKey: sessionParam,
        limit: 1,
        ...(opts.agent ? { agent: opts.agent } : {}),
      })
      .catch(() => undefined);
  };
  watch();
  // An approval this chat's turn waits for: shown here and settled here (typed while the turn runs).
  client.on("approval.request", (raw) => {
    const a = raw as { id?: unknown; text?: unknown };
    if (typeof a.id !== "string" || typeof a.text !== "string") return;
    out.write(`\n${safeText(a.text)}\n(type /approve ${safeLine(a.id)} or /deny ${safeLine(a.id)} here)\n`);
  });

  /** `/approve <id>` / `/deny <id>` typed while a turn runs: settled now, not queued behind the turn. */
  const settle = async (decision: "approve" | "deny", id: string): Promise<void> => {
    try {
      const r = await client.request<{ id: string; decision: string }>("approvals.resolve", { id, decision });
      out.write(`\n(${r.decision === "approved" ? "Approved" : "Denied"} ${r.id}.)\n`);
    } catch (err) {
      process.stderr.write(`\nerror: ${(err as Error).message}\n`);
    }
  };

  const sendParams = (w: Waiter): Record<string, unknown> => ({
    sessionKey: sessionParam,
    message: w.message,
    ...(opts.agent ? { agent: opts.agent } : {}),
    idempotencyKey: w.key,
  });

  /** Ends a line whose run's events this client missed, from the result the gateway kept. */
  const finishFrom = (w: Waiter, result: NonNullable<SendAnswer["result"]>): void => {
    const sep = w.streamed ? "\n" : "";
    if (result.error) process.stderr.write(`${sep}error: ${result.error.message}\n`);
    else if (result.finishReason === "aborted") out.write(`${sep}[stopped]\n`);
    else {
      const text = result.text ?? "";
      // Print only what the stream had not shown yet.
      out.write(safeText(text.startsWith(w.streamed) ? text.slice(w.streamed.length) : `${sep}${text}`));
      out.write("\n");
    }
    w.done();
  };

  /** Takes chat.send's answer for the line `w` (first send, retry or re-check after a reconnect). */
  const accept = (w: Waiter, r: SendAnswer): void => {
    if (waiter !== w) return;
    sessionKey = r.sessionKey;
    if (r.requestId) w.requestId = r.requestId;
    if (r.status === "done" && r.result) return finishFrom(w, r.result);
    w.runId = r.runId;
    const buffered = early;
    early = [];
    for (const e of buffered) onChat(e);
  };

  /** Sends the line, re-sending it with the same key when the connection drops before the answer. */
  const submit = async (w: Waiter): Promise<void> => {
    for (;;) {
      try {
        await client.ready();
        w.attempted = true;
        return accept(w, await client.request<SendAnswer>("chat.send", sendParams(w)));
      } catch (err) {
        if (waiter !== w) return;
        if ((err as GatewayClientError).code === "GATEWAY_CLOSED") continue;
        process.stderr.write(`error: ${(err as Error).message}\n`);
        return w.done();
      }
    }
  };

  /**
   * After a reconnect, a line that was running may have ended while this client was away (its events
   * went to the old socket): asking again with the same key returns the stored result, or `started`
   * while it still runs (its events then reach this socket).
   */
  const reattach = async (w: Waiter): Promise<void> => {
    try {
      const r = await client.request<SendAnswer>("chat.send", sendParams(w));
      accept(w, r);
      // A turn cut off by a crash is resumed by the daemon under another run id, so its events do not
      // name this line's run: ask again until its stored answer is there.
      if (waiter === w && r.status === "started" && r.duplicate)
        setTimeout(() => {
          if (waiter === w && client.connected) void reattach(w);
        }, 500);
    } catch (err) {
      if (waiter !== w || (err as GatewayClientError).code === "GATEWAY_CLOSED") return;
      process.stderr.write(`error: ${(err as Error).message}\n`);
      w.done();
    }
  };

  const send = async (text: string): Promise<void> => {
    if (!client.connected)
      notify("familiar chat: not connected; your message will be sent once reconnected (Ctrl-C quits)");
    await new Promise<void>((resolve) => {
      let finished = false;
      const w: Waiter = {
        key: `cli-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`,
        message: text,
        attempted: false,
        runId: undefined,
        streamed: "",
        done: () => {
          if (finished) return;
          finished = true;
          waiter = undefined;
          if (opts.verbose && w.requestId)
            out.write(`(request ${w.requestId}; its call tree: familiar trace ${w.requestId})\n`);
          resolve();
        },
      };
      waiter = w;
      early = [];
      void submit(w);
    });
  };

  const rl = createInterface({ input: process.stdin, output: tty ? out : undefined, terminal: tty });
  let interrupts = 0;
  const onInterrupt = (): void => {
    // While reconnecting there is nothing to abort: Ctrl-C quits (unsent lines are not sent).
    if (!client.connected) {
      const w = waiter;
      if (w)
        process.stderr.write(
          `\nfamiliar chat: ${
            w.runId !== undefined
              ? "the reply to your last message was not shown"
              : w.attempted
                ? "your last message may have reached the daemon; its reply was not shown"
                : "your last message was not sent"
          }\n`,
        );
      process.exit(130);
    }
    if (waiter && interrupts === 0) {
      interrupts++;
      out.write("\n(aborting; Ctrl-C again to exit)\n");
      void client.request("chat.abort", { sessionKey }).catch(() => undefined);
      return;
    }
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
  let quitByCommand = false;
  // Lines are read as they come, also while a turn runs; ordinary ones wait here for the reply.
  const queue: string[] = [];
  let busy = false;
  let inputEnded = false;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((res) => (finish = res));
  const pump = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    while (queue.length > 0 && !quitByCommand) {
      const text = queue.shift()!;
      if (text === "/exit" || text === "/quit") {
        quitByCommand = true;
        break;
      }
      interrupts = 0;
      await send(text);
      if (queue.length === 0 && !inputEnded) prompt();
    }
    busy = false;
    if (quitByCommand || inputEnded) finish();
  };
  rl.on("line", (line) => {
    const text = line.trim();
    if (!text) {
      if (!busy) prompt();
      return;
    }
    const m = /^\/(approve|deny)\s+(\S+)\s*$/i.exec(text);
    if (busy && m) {
      void settle(m[1]!.toLowerCase() as "approve" | "deny", m[2]!);
      return;
    }
    if (busy && waiter && /^\/stop$/i.test(text)) {
      void client.request("chat.abort", { sessionKey }).catch(() => undefined);
      return;
    }
    queue.push(text);
    void pump();
  });
  rl.on("close", () => {
    inputEnded = true;
    if (!busy) finish();
  });
  await finished;
  // Ctrl-D ends input on the "you> " line; without a newline the shell prompt would be glued to it.
  if (tty && !quitByCommand) out.write("\n");
  rl.close();
  process.off("SIGINT", onInterrupt);
  await client.close();
}
