/**
 * The shared channel contract suite (test/contracts/channel-contract.ts) against the Discord channel:
 * discord.js talking to the fake Discord gateway + REST server.
 */
import { runChannelContract } from "../../../test/contracts/channel-contract.js";
import { CHAN, startDiscordHarness } from "../../../test/helpers/discord-harness.js";

runChannelContract("discord", async () => {
  const h = await startDiscordHarness({ start: false });
  return {
    channel: h.channel,
    target: CHAN,
    delivered: () => h.discord.channelMessages(CHAN).map((m) => m.content),
    invalidTarget: "general",
    failDelivery: () =>
      h.discord.refuse({ method: "POST", path: /^\/channels\/\d+\/messages$/, times: 100, status: 403 }),
    cleanup: () => h.close(),
  };
});
