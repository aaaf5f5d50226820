/**
 * The routing rule itself (`resolveAgentId`) over a real validated config: specificity (chat > guild >
 * channel), the first of equals, explicit choices, and entries naming undefined agents falling through.
 */
import { describe, expect, it } from "vitest";
import { configFromObject } from "../../internal/config/load.js";
import { resolveAgentId } from "../../internal/inbound/agent-choice.js";

const cfg = configFromObject(
  {
    agents: { default: "main" },
    routing: [
      { channel: "discord", agent: "chan" },
      { channel: "discord", guild: "g1", agent: "guild" },
      { channel: "discord", chat: "c1", agent: "chat" },
      { channel: "discord", guild: "g1", agent: "guild-second" },
      { channel: "discord", guild: "g2", agent: "gone" },
      { channel: "telegram", chat: "42", agent: "tg" },
    ],
  },
  "/tmp",
);
const defined = new Set(["main", "chan", "guild", "chat", "guild-second", "tg", "picked"]);
const exists = (id: string): boolean => defined.has(id);

describe("resolveAgentId", () => {
  it("prefers the most specific entry, the first of equals, whatever the list order", () => {
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c1", guildId: "g1" }, undefined, exists)).toBe(
      "chat",
    );
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c9", guildId: "g1" }, undefined, exists)).toBe(
      "guild",
    );
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c9", guildId: "g3" }, undefined, exists)).toBe(
      "chan",
    );
    expect(resolveAgentId(cfg, { channel: "telegram", chatId: "42" }, undefined, exists)).toBe("tg");
    expect(resolveAgentId(cfg, { channel: "telegram", chatId: "43" }, undefined, exists)).toBe("main");
    expect(resolveAgentId(cfg, { channel: "gateway", chatId: "x" }, undefined, exists)).toBe("main");
  });

  it("an explicit choice wins; undefined agents fall through to the next rule", () => {
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c1", guildId: "g1" }, "picked", exists)).toBe(
      "picked",
    );
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c1", guildId: "g1" }, "deleted", exists)).toBe(
      "chat",
    );
    // g2's entry names an agent nobody defines: the channel-wide entry answers.
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c9", guildId: "g2" }, undefined, exists)).toBe(
      "chan",
    );
    // Without an existence check, everything named is taken as is.
    expect(resolveAgentId(cfg, { channel: "discord", chatId: "c9", guildId: "g2" })).toBe("gone");
  });
});
