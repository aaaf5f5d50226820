/**
 * Runs the channel contract against the in-memory channel and Telegram (fake Bot API server).
 * Discord runs it from its own test file.
 */
import { ChannelError } from "../../internal/channels/channel.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { createAgentHost } from "../../internal/agent/host.js";
import { createModelRouter } from "../../internal/models/router.js";
import { createTelegramChannel } from "../../internal/channels/telegram/telegram-channel.js";
import { startFakeTelegram } from "../fakes/telegram-server.js";
import { createTestCore } from "../helpers/core.js";
import { runChannelContract } from "./channel-contract.js";

runChannelContract("memory", async () => {
  const ch = new MemoryChannel("memory");
  return {
    channel: ch,
    target: "owner",
    delivered: () => ch.sent.filter((s) => s.target === "owner").map((s) => s.text),
    failDelivery: () => {
      ch.failWith = new ChannelError("CHANNEL_REFUSED", "scripted refusal");
    },
    cleanup: async () => undefined,
  };
});

runChannelContract("telegram", async () => {
  const tg = await startFakeTelegram();
  const core = createTestCore({
    channels: { telegram: { enabled: true, token: tg.token, api_root: tg.apiRoot, allow_from: [1] } },
  });
  const model = createModelRouter({ config: () => core.ctx.config(), logger: core.ctx.logger });
  const host = createAgentHost({ ctx: core.ctx, model });
  const ch = createTelegramChannel(core.ctx, { host });
  const chatId = 777;
  return {
    channel: ch,
    target: String(chatId),
    delivered: () =>
      tg.visible(chatId).map((m) =>
        m.text
          .replace(/<[^>]+>/g, "")
          .replace(/&lt;/g, "<")
          .replace(/&gt;/g, ">")
          .replace(/&quot;/g, '"')
          .replace(/&amp;/g, "&"),
      ),
    invalidTarget: "not-a-chat",
    failDelivery: () =>
      tg.failNext("sendMessage", { status: 403, description: "Forbidden: bot was blocked by the user" }, 100),
    cleanup: async () => {
      await tg.close();
      core.close();
    },
  };
});
