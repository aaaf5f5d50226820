import { afterEach, describe, expect, it } from "vitest";
import { ANN, startDiscordHarness, type DiscordHarness } from "../../../test/helpers/discord-harness.js";

let h: DiscordHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("discord e2e", () => {
  it("answers a DM with one streamed, edited message", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    const answer = "Hello Ann! This answer streams in small pieces so the preview gets edited a few times.";
    ai.enqueue({ text: answer, chunkSize: 6, delayMs: 40 });
    discord.userMessage({ channelId: "800000000000000001", content: "hi", author: ANN });
    await discord.waitFor(
      () => discord.channelMessages("800000000000000001").some((m) => m.content === answer),
      20_000,
      "the final answer",
    );
    const msgs = discord.channelMessages("800000000000000001");
    expect(msgs).toHaveLength(1);
    expect(msgs[0]?.history.length).toBeGreaterThan(1);
    console.log(
      msgs[0]?.history,
      discord.calls.map((c) => `${c.method} ${c.path} ${c.status}`),
    );
  });
});
