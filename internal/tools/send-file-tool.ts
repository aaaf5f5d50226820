/**
 * `send_file`: the agent sends a workspace file to the current chat as a document, a photo or an
 * audio message, with a caption. Another target must be allowed by `tools.send_message.allowed_targets`
 * (the same rule as send_message).
 */
import { z } from "zod";
import type { Config } from "../config/schema.js";
import { targetAllowed } from "./basic-tools.js";
import { sendWorkspaceFile, type FileDelivery } from "./send-file.js";
import { defineTool, ToolError, type Tool } from "./tool.js";
import { viewGate } from "./fs-tools.js";

const schema = z.object({
  path: z.string().min(1).describe("workspace-relative path"),
  caption: z.string().max(4000).optional(),
  as: z.enum(["auto", "document", "photo", "audio", "voice"]).default("auto"),
  target: z.string().optional().describe("default: this chat"),
});

/** Creates the send_file tool. */
export function createSendFileTool(deps: {
  config: () => Config;
  channels: FileDelivery;
}): Tool<typeof schema> {
  return defineTool({
    name: "send_file",
    group: "messaging",
    description: "Send a workspace file to the chat (images as photos, audio as audio).",
    schema,
    async execute(args, _signal, ctx) {
      const current = ctx.replyTarget;
      const target = args.target ?? current;
      if (!target)
        throw new ToolError(
          "SEND_NO_CHAT",
          "this session has no chat to send to; name a target allowed by tools.send_message.allowed_targets",
        );
      const allowed = deps.config().tools.send_message.allowed_targets;
      if (target !== current && !targetAllowed(target, allowed))
        throw new ToolError(
          "SEND_NOT_ALLOWED",
          `target "${target}" is not the current chat and not in tools.send_message.allowed_targets`,
        );
      return sendWorkspaceFile(deps.channels, {
        workspace: ctx.workspace,
        target,
        path: args.path,
        as: args.as,
        beforeOpen: viewGate(ctx),
        ...(args.caption !== undefined ? { caption: args.caption } : {}),
      });
    },
  });
}
