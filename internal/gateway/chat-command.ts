/**
 * Slash commands sent through `chat.send` (`/new`, `/compact`, `/model`, ...): answered directly, never
 * through the model; the reply also reaches the client as a `final` chat event, like a turn's.
 */
import { randomUUID } from "node:crypto";
import type { ParsedCommand } from "../inbound/commands.js";
import { ZERO_USAGE } from "../models/types.js";
import type { GatewayRuntime } from "./runtime.js";
import type { MethodHandler } from "./ws-server.js";

/** The answer of a slash command sent through `chat.send`. */
export interface CommandAnswer {
  runId: string;
  sessionKey: string;
  status: "done";
  command: string;
  result: { runId: string; text: string; finishReason: string };
}

/** Runs `cmd` for a gateway client in `sessionKey`, at the front desk. */
export async function runGatewayCommand(
  rt: GatewayRuntime,
  cmd: ParsedCommand,
  o: {
    sessionKey: string;
    agentId: string;
    /** The `/agent` choice scope of the session name. */
    scope: string;
    chatId: string;
    conn: Parameters<MethodHandler>[1];
  },
): Promise<CommandAnswer> {
  const { sessionKey, conn } = o;
  const text = await rt.frontDesk().command(
    cmd,
    { channel: "gateway", sessionKey, agentId: o.agentId },
    {
      chatScope: o.scope,
      chatId: o.chatId,
      sender: { id: `gateway:${conn.clientName}`, name: conn.clientName },
      // A chat client settles only approvals sent to its own connection; the owner's clients any.
      approver: conn.role === "owner" ? "owner" : { target: `gateway:conn:${conn.id}` },
    },
  );
  const runId = `cmd-${randomUUID()}`;
  setImmediate(() =>
    conn.send("chat", {
      state: "final",
      runId,
      sessionKey,
      text,
      finishReason: "stop",
      usage: { ...ZERO_USAGE },
      command: cmd.name,
    }),
  );
  return {
    runId,
    sessionKey,
    status: "done",
    command: cmd.name,
    result: { runId, text, finishReason: "stop" },
  };
}
