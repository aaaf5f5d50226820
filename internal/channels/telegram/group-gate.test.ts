/**
 * Group access on Telegram: which groups, and which messages address the bot.
 */
import { describe, expect, it } from "vitest";
import type { Message } from "grammy/types";
import { groupAllowed, isAddressed, stripMention, type GroupConfig } from "./group-gate.js";

const bot = { id: 42, username: "familiar_bot" };
const cfg = (over: Partial<GroupConfig> = {}): GroupConfig => ({
  groups: ["-100"],
  require_mention: true,
  mention_patterns: [],
  ...over,
});
const msg = (text: string, extra: Partial<Message> = {}): Message =>
  ({
    message_id: 1,
    date: 0,
    chat: { id: -100, type: "supergroup", title: "g" },
    from: { id: 7, is_bot: false, first_name: "Ann" },
    text,
    ...extra,
  }) as Message;

describe("telegram group gate", () => {
  it("answers only listed groups, or every group with *", () => {
    expect(groupAllowed(cfg(), -100)).toBe(true);
    expect(groupAllowed(cfg(), -200)).toBe(false);
    expect(groupAllowed(cfg({ groups: [] }), -100)).toBe(false);
    expect(groupAllowed(cfg({ groups: ["*"] }), -200)).toBe(true);
    expect(groupAllowed(cfg({ groups: [-200] }), -200)).toBe(true);
  });

  it("counts @mentions (any case), replies to the bot, text mentions and patterns", () => {
    const c = cfg({ mention_patterns: ["^hey familiar\\b", "([invalid"] });
    const addressed = (m: Message): boolean => isAddressed(c, bot, m, m.text ?? "");
    expect(addressed(msg("just chatting"))).toBe(false);
    expect(addressed(msg("hi @Familiar_Bot how are you"))).toBe(true);
    expect(addressed(msg("hi @familiar_bot2, not you"))).toBe(false);
    expect(addressed(msg("@familiar_bot2 and @familiar_bot"))).toBe(true);
    expect(
      addressed(
        msg("ok", {
          reply_to_message: msg("x", { from: { id: 42, is_bot: true, first_name: "F" } }) as never,
        }),
      ),
    ).toBe(true);
    expect(addressed(msg("ok", { reply_to_message: msg("x") as never }))).toBe(false);
    expect(
      addressed(
        msg("Familiar, look", {
          entities: [
            { type: "text_mention", offset: 0, length: 8, user: { id: 42, is_bot: true, first_name: "F" } },
          ],
        }),
      ),
    ).toBe(true);
    expect(addressed(msg("Hey familiar what's up"))).toBe(true);
    expect(addressed(msg("they said hey familiar"))).toBe(false);
  });

  it("treats commands as addressed unless they name another bot", () => {
    const addressed = (t: string): boolean => isAddressed(cfg(), bot, msg(t), t);
    expect(addressed("/status")).toBe(true);
    expect(addressed("/status@familiar_bot")).toBe(true);
    expect(addressed("/status@other_bot")).toBe(false);
  });

  it("answers everything with require_mention: false, and strips the mention for the model", () => {
    expect(isAddressed(cfg({ require_mention: false }), bot, msg("anything"), "anything")).toBe(true);
    expect(stripMention("@familiar_bot  what is up?", "familiar_bot")).toBe("what is up?");
    expect(stripMention("tell @FAMILIAR_BOT hi", "familiar_bot")).toBe("tell hi");
  });
});
