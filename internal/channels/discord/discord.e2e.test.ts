/**
 * End-to-end: the real Discord channel (discord.js) against the fake Discord gateway + REST server,
 * with the real AgentHost answering through the fake OpenAI server, over real sockets and a real
 * SQLite store.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  ANN,
  BOB,
  CHAN,
  GUILD,
  OTHER_CHAN,
  THREAD,
  startDiscordHarness,
  type DiscordHarness,
} from "../../../test/helpers/discord-harness.js";
import type { FakeDiscord } from "../../../test/fakes/discord-server.js";
import { CHAT_COMMANDS } from "../../inbound/commands.js";
import { ChannelError } from "../channel.js";
import { NOT_AN_APPROVER } from "../../inbound/front-desk.js";
import { PreviewLedger } from "../common/preview-ledger.js";
import { PAIRING_WELCOME } from "../common/pairing-welcome.js";

const DM = "800000000000000001";
/** The hash prefix an approval question's Approve buttons carry (approval-buttons.ts). */
const HASH = "0123456789ab";

let h: DiscordHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function contents(fake: FakeDiscord, channelId: string): string[] {
  return fake.channelMessages(channelId).map((m) => m.content);
}

async function answered(fake: FakeDiscord, channelId: string, pred: (text: string) => boolean, what: string) {
  await fake.waitFor(() => contents(fake, channelId).some(pred), 25_000, what);
}

/** Message bodies the bot sent or edited (channel messages, webhooks, interaction callbacks). */
function outboundBodies(fake: FakeDiscord): Record<string, unknown>[] {
  return fake.calls
    .filter(
      (c) =>
        (c.method === "POST" || c.method === "PATCH") &&
        /^\/(channels\/\d+\/messages|webhooks\/)/.test(c.path) &&
        c.status < 300,
    )
    .map((c) => c.body as Record<string, unknown>);
}

describe("discord channel end to end", () => {
  it("answers a DM with one streamed, edited message, shows typing and reports connected", async () => {
    h = await startDiscordHarness();
    const { discord, ai, registry } = h;
    expect(registry.statuses().discord?.state).toBe("connected");
    expect(registry.statuses().discord?.identity).toBe("@familiar");
    const answer = "Hello Ann! This answer streams in small pieces so the preview gets edited a few times.";
    ai.enqueue({ text: answer, chunkSize: 6, delayMs: 40 });
    discord.userMessage({ channelId: DM, content: "hi", author: ANN });
    await answered(discord, DM, (t) => t === answer, "the final answer");
    const msgs = discord.channelMessages(DM);
    expect(msgs).toHaveLength(1);
    // Streamed: the message was created with a prefix and edited up to the final text.
    expect(msgs[0]?.history.length).toBeGreaterThan(1);
    expect(answer.startsWith(msgs[0]?.history[0] ?? "x")).toBe(true);
    expect(discord.callsTo("POST", new RegExp(`^/channels/${DM}/typing$`)).length).toBeGreaterThan(0);
    // The model saw the user's text; the gateway ran without compression.
    expect(JSON.stringify(ai.requests[0]?.body?.messages)).toContain("hi");
    expect(discord.gateway.queries[0]).toBe("?v=10&encoding=json");
  });

  it("answers in allowed guild channels only when mentioned, per thread, and without mention when configured", async () => {
    h = await startDiscordHarness();
    const { discord, ai, core } = h;
    const bot = discord.bot.id;
    discord.userMessage({ channelId: CHAN, guildId: GUILD, content: "not for you", author: ANN });
    discord.userMessage({
      channelId: OTHER_CHAN,
      guildId: GUILD,
      content: `<@${bot}> wrong channel`,
      author: ANN,
      mentionsBot: true,
    });
    discord.userMessage({
      channelId: CHAN,
      guildId: GUILD,
      content: `<@${bot}> hello guild`,
      author: ANN,
      mentionsBot: true,
    });
    await answered(discord, CHAN, (t) => t === "echo: hello guild", "the mentioned message's answer");
    expect(ai.requests).toHaveLength(1);
    expect(contents(discord, OTHER_CHAN)).toEqual([]);

    // A reply to one of the bot's messages counts as addressing it.
    const botMsg = discord.channelMessages(CHAN)[0];
    discord.userMessage({
      channelId: CHAN,
      guildId: GUILD,
      content: "and a reply",
      author: BOB,
      extra: { type: 19, referenced_message: { id: botMsg?.id, author: { id: bot, username: "familiar" } } },
    });
    await answered(discord, CHAN, (t) => t === "echo: and a reply", "the reply's answer");

    // Threads follow their parent's allow list and get their own session.
    discord.userMessage({
      channelId: THREAD,
      guildId: GUILD,
      content: `<@${bot}> /whoami`,
      author: ANN,
      mentionsBot: true,
    });
    await answered(discord, THREAD, (t) => t.includes("Session:"), "/whoami in the thread");
    expect(contents(discord, THREAD)[0]).toContain(`discord:group:${THREAD}`);

    // require_mention: false on the guild.
    core.setConfig({
      ...core.ctx.config(),
      channels: {
        ...core.ctx.config().channels,
        discord: {
          ...core.ctx.config().channels.discord,
          guilds: { [GUILD]: { channels: [CHAN], require_mention: false } },
        },
      },
    });
    discord.userMessage({ channelId: CHAN, guildId: GUILD, content: "no mention now", author: ANN });
    await answered(discord, CHAN, (t) => t === "echo: no mention now", "the unmentioned answer");

    // Allow lists also take channel names.
    const c2 = core.ctx.config();
    core.setConfig({
      ...c2,
      channels: {
        ...c2.channels,
        discord: {
          ...c2.channels.discord,
          guilds: { [GUILD]: { channels: ["#channel-1"], require_mention: false } },
        },
      },
    });
    discord.userMessage({ channelId: OTHER_CHAN, guildId: GUILD, content: "by name", author: ANN });
    await answered(
      discord,
      OTHER_CHAN,
      (t) => t === "echo: by name",
      "the answer in a channel allowed by name",
    );
  });

  it("pairs an unknown DM user: a code first, answers after approval", async () => {
    h = await startDiscordHarness({ discord: { dm_policy: "pairing" } });
    const { discord, ai, channel } = h;
    discord.userMessage({ channelId: DM, content: "let me in", author: BOB });
    await answered(discord, DM, (t) => t.includes("familiar pairing approve"), "the pairing code");
    const code = /familiar pairing approve (\S+)/.exec(contents(discord, DM)[0] ?? "")?.[1] ?? "";
    expect(code).toMatch(/^[A-Z2-9]{8}$/);
    expect(ai.requests).toHaveLength(0);
    expect(channel.pairing.approve(code, "discord")?.userId).toBe(BOB.id);
    // Bob is told, once, in his DM (the gateway's pairing.approve and the channel's sweep both call
    // this; the CLI's approval is found by the sweep).
    expect(await channel.welcomePaired()).toBe(1);
    expect(await channel.welcomePaired()).toBe(0);
    const bobDm = discord.dmChannels.get(BOB.id) ?? "";
    expect(discord.channelMessages(bobDm).map((m) => m.content)).toEqual([PAIRING_WELCOME]);
    discord.userMessage({ channelId: DM, content: "now?", author: BOB });
    await answered(discord, DM, (t) => t === "echo: now?", "the answer after approval");
    expect(ai.requests).toHaveLength(1);
  });

  it("splits a long answer at 2000 characters and 17 lines without breaking code fences", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    const para = (i: number): string =>
      `Paragraph ${i}: ` + Array.from({ length: 40 }, (_, j) => `word${i}x${j}`).join(" ") + ".";
    const code = Array.from({ length: 30 }, (_, i) => `  line_${i} = compute(${i})`).join("\n");
    const text = [para(1), para(2), "```python", code, "```", para(3), para(4), para(5), "THE END"].join(
      "\n\n",
    );
    ai.enqueue({ text, chunkSize: 400 });
    discord.userMessage({ channelId: DM, content: "long please", author: ANN });
    await answered(discord, DM, (t) => t.includes("THE END"), "the last chunk");
    const msgs = contents(discord, DM);
    expect(msgs.length).toBeGreaterThan(2);
    for (const m of msgs) {
      expect(m.length).toBeLessThanOrEqual(2000);
      expect(m.split("\n").length).toBeLessThanOrEqual(17);
      // Every chunk renders on its own: fences are balanced.
      expect((m.match(/^```/gm) ?? []).length % 2).toBe(0);
      expect(m.endsWith("…")).toBe(false);
    }
    // Nothing is lost, in order: every original non-fence line appears, in sequence.
    const joined = msgs.join("\n");
    let at = 0;
    for (const line of text.split("\n").filter((l) => l.trim() && !l.startsWith("```"))) {
      const idx = joined.indexOf(line.trim(), at);
      expect(idx, `missing: ${line}`).toBeGreaterThanOrEqual(0);
      at = idx;
    }
    // Code continued in a later chunk was reopened with its language.
    expect(msgs.filter((m) => m.includes("```python")).length).toBeGreaterThan(1);
  });

  it("resumes after a dropped connection, replays missed messages, and answers duplicates once (also after a restart)", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    discord.userMessage({ channelId: DM, content: "before", author: ANN });
    await answered(discord, DM, (t) => t === "echo: before", "the first answer");

    discord.dropConnection();
    const missed = discord.userMessage({ channelId: DM, content: "while down", author: ANN });
    await answered(discord, DM, (t) => t === "echo: while down", "the answer to the missed message");
    expect(discord.gateway.resumes).toBe(1);
    expect(discord.gateway.identifies).toBe(1);
    await discord.waitFor(() => h?.channel.status().state === "connected", 10_000, "connected again");

    // The same message delivered again is not answered again.
    discord.dispatch("MESSAGE_CREATE", missed);
    discord.userMessage({ channelId: DM, content: "after dup", author: ANN });
    await answered(discord, DM, (t) => t === "echo: after dup", "the next answer");
    expect(contents(discord, DM).filter((t) => t === "echo: while down")).toHaveLength(1);

    // A new process (same store) that gets the old message again does not answer it either.
    await h.restart();
    discord.dispatch("MESSAGE_CREATE", missed);
    discord.userMessage({ channelId: DM, content: "after restart", author: ANN });
    await answered(discord, DM, (t) => t === "echo: after restart", "the answer after restart");
    expect(contents(discord, DM).filter((t) => t === "echo: while down")).toHaveLength(1);
    expect(ai.requests).toHaveLength(4);
  });

  it("obeys REST 429s and delivers the final text exactly once", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    discord.rateLimit({
      method: "POST",
      path: new RegExp(`^/channels/${DM}/messages$`),
      times: 1,
      retryAfter: 0.3,
    });
    discord.rateLimit({
      method: "PATCH",
      path: new RegExp(`^/channels/${DM}/messages/`),
      times: 2,
      retryAfter: 0.3,
    });
    const answer = "Rate limits are part of life; this reply arrives once and complete despite them.";
    ai.enqueue({ text: answer, chunkSize: 8, delayMs: 50 });
    discord.userMessage({ channelId: DM, content: "go", author: ANN });
    await answered(discord, DM, (t) => t === answer, "the final answer");
    const limited = discord.calls.filter((c) => c.status === 429);
    expect(limited).toHaveLength(3);
    // Each 429 was followed by a retry of the same route no sooner than retry_after allows.
    for (const c of limited) {
      const after = discord.calls.slice(discord.calls.indexOf(c) + 1);
      const retry = after.find((x) => x.method === c.method && x.path === c.path);
      expect(retry).toBeDefined();
      expect((retry?.at ?? 0) - c.at).toBeGreaterThanOrEqual(250);
    }
    const created = discord
      .callsTo("POST", new RegExp(`^/channels/${DM}/messages$`))
      .filter((c) => c.status === 200);
    expect(created).toHaveLength(1);
    expect(discord.channelMessages(DM)).toHaveLength(1);
    expect([...discord.messages.values()].filter((m) => m.content === answer)).toHaveLength(1);
  });

  it("registers the slash commands at start and answers one through a deferred interaction", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    await discord.waitFor(() => discord.commands.has("global"), 10_000, "command registration");
    const names = (discord.commands.get("global") as { name: string }[]).map((c) => c.name);
    expect(names).toEqual(CHAT_COMMANDS.map((c) => c.name));

    const ix = discord.interaction({
      channelId: DM,
      user: ANN,
      command: { name: "model", options: [{ name: "model", value: "a/m2" }] },
    });
    const original = `interaction:${ix.token}:@original`;
    await discord.waitFor(
      () => discord.messages.get(original)?.content.includes("a/m2") ?? false,
      20_000,
      "/model reply",
    );
    expect(discord.interactionCallbacks.get(ix.id)).toEqual([{ type: 5, data: { flags: 4 } }]);
    expect(discord.messages.get(original)?.content).toBe("Model for this chat: a/m2");

    const st = discord.interaction({ channelId: DM, user: ANN, command: { name: "status" } });
    await discord.waitFor(
      () => discord.messages.get(`interaction:${st.token}:@original`)?.content.includes("Model:") ?? false,
      20_000,
      "/status reply",
    );
    expect(discord.messages.get(`interaction:${st.token}:@original`)?.content).toContain("Model: a/m2");

    // The same session now uses the chosen model, and text commands work too.
    discord.userMessage({ channelId: DM, content: "which model?", author: ANN });
    await answered(discord, DM, (t) => t === "echo: which model?", "the answer");
    expect(ai.requests.at(-1)?.model).toBe("m2");
    discord.userMessage({ channelId: DM, content: "/whoami", author: ANN });
    await answered(discord, DM, (t) => t.includes(`id ${ANN.id}`), "/whoami as text");
  });

  it("never pings: @everyone, @here, roles and users in model output go out with allowed_mentions parse []", async () => {
    h = await startDiscordHarness();
    const { discord, ai } = h;
    const answer = `Attention @everyone and @here, also <@&123456789012345678> and <@${BOB.id}>!`;
    ai.enqueue({ text: answer, chunkSize: 10, delayMs: 30 });
    discord.userMessage({
      channelId: CHAN,
      guildId: GUILD,
      content: `<@${discord.bot.id}> ping all`,
      author: ANN,
      mentionsBot: true,
    });
    await answered(discord, CHAN, (t) => t === answer, "the answer");
    const bodies = outboundBodies(discord);
    expect(bodies.length).toBeGreaterThan(0);
    for (const b of bodies) expect(b.allowed_mentions).toEqual({ parse: [] });
  });

  it("nothing unfurls: replies, edits, questions, refusals and interaction replies carry SuppressEmbeds", async () => {
    h = await startDiscordHarness({
      discord: { dm_policy: "pairing", allow_from: [ANN.id, BOB.id], owner: [ANN.id] },
      approvals: { resolve: () => true, show: () => ({ text: "whole https://evil.example/?d=secret" }) },
    });
    const { discord, ai, channel } = h;
    ai.enqueue({ text: "see https://evil.example/?d=secret", chunkSize: 5, delayMs: 30 });
    discord.userMessage({ channelId: DM, content: "hi", author: ANN });
    await answered(discord, DM, (t) => t.includes("evil.example"), "the answer");
    await channel.send(CHAN, "fetch https://evil.example/?d=secret?", {
      approvalId: "ap9",
      approvalHash: HASH,
      approvalShowAll: true,
    });
    // Bob is allowed (paired) but not the owner: his press is refused with a line, and the refusal
    // does not unfurl either.
    const bob = discord.interaction({
      channelId: CHAN,
      guildId: GUILD,
      user: BOB,
      customId: `approve:ap9:${HASH}`,
    });
    await discord.waitFor(
      () => (discord.interactionCallbacks.get(bob.id) ?? []).length > 0,
      15_000,
      "refusal",
    );
    expect(discord.interactionCallbacks.get(bob.id)).toEqual([
      { type: 4, data: expect.objectContaining({ content: NOT_AN_APPROVER, flags: 64 | 4 }) },
    ]);
    // The owner's "Show all" sends the whole text to the owner's DM, not the guild channel.
    const show = discord.interaction({ channelId: CHAN, guildId: GUILD, user: ANN, customId: "show:ap9" });
    await discord.waitFor(() => (discord.interactionCallbacks.get(show.id) ?? []).length > 0, 15_000, "show");
    await discord.waitFor(
      () => discord.calls.some((c) => JSON.stringify(c.body ?? "").includes("whole https://evil.example")),
      15_000,
      "the whole text",
    );
    expect(discord.channelMessages(CHAN).some((m) => m.content.includes("whole https"))).toBe(false);
    await channel.closeApproval("ap9", "withdrawn: the turn that asked ended before an answer");
    const q = discord.channelMessages(CHAN).find((m) => m.content.includes("fetch https://evil.example"));
    expect(q?.content).toContain("[withdrawn");
    expect(q?.components).toEqual([]);
    const bodies = outboundBodies(discord);
    expect(bodies.length).toBeGreaterThan(3);
    for (const b of bodies) expect(((b.flags as number | undefined) ?? 0) & 4).toBe(4);
  });

  it("sends approval buttons and resolves a button press via the shared /approve command", async () => {
    const decisions: [string, string][] = [];
    h = await startDiscordHarness({
      discord: { allow_from: [ANN.id] },
      approvals: {
        resolve: (id, decision) => {
          if (id !== "ap1") return false;
          decisions.push([id, decision]);
          return true;
        },
      },
    });
    const { discord, channel } = h;
    await channel.send(CHAN, "Run `rm -rf /tmp/x`?", { approvalId: "ap1", approvalHash: HASH });
    const msg = discord.channelMessages(CHAN)[0];
    // Approve carries the hash prefix of what the question showed; a press without it decides nothing.
    expect(JSON.stringify(msg?.components)).toContain(`"custom_id":"approve:ap1:${HASH}"`);
    expect(JSON.stringify(msg?.components)).toContain('"custom_id":"deny:ap1"');
    const bare = discord.interaction({ channelId: CHAN, guildId: GUILD, user: ANN, customId: "approve:ap1" });
    await discord.waitFor(
      () => (discord.interactionCallbacks.get(bare.id) ?? []).length > 0,
      15_000,
      "the bare press's answer",
    );
    expect(JSON.stringify(discord.interactionCallbacks.get(bare.id))).toContain("Unknown action.");
    expect(decisions).toEqual([]);

    const ix = discord.interaction({
      channelId: CHAN,
      guildId: GUILD,
      user: ANN,
      customId: `approve:ap1:${HASH}`,
    });
    await answered(
      discord,
      `interaction:${ix.token}`,
      (t) => t === "Approved ap1.",
      "the approval follow-up",
    );
    expect(decisions).toEqual([["ap1", "approved"]]);
    expect(discord.interactionCallbacks.get(ix.id)).toEqual([{ type: 7, data: { components: [] } }]);

    discord.userMessage({ channelId: DM, content: "/deny nope", author: ANN });
    await answered(discord, DM, (t) => t.startsWith("No pending approval nope"), "the /deny reply");
  });

  it("lets only allowed users decide approvals in a guild channel (buttons and /approve)", async () => {
    const decisions: [string, string][] = [];
    h = await startDiscordHarness({
      discord: { dm_policy: "pairing", allow_from: [ANN.id] },
      approvals: {
        resolve: (id, decision) => {
          decisions.push([id, decision]);
          return true;
        },
      },
    });
    const { discord, channel } = h;
    await channel.send(CHAN, "Run `rm -rf /tmp/x`?", { approvalId: "ap2", approvalHash: HASH });
    // A guild member who is not an allowed user presses the button: refused, the buttons stay.
    const bobPress = discord.interaction({
      channelId: CHAN,
      guildId: GUILD,
      user: BOB,
      customId: `approve:ap2:${HASH}`,
    });
    await discord.waitFor(
      () => (discord.interactionCallbacks.get(bobPress.id) ?? []).length > 0,
      15_000,
      "refusal",
    );
    expect(discord.interactionCallbacks.get(bobPress.id)).toEqual([
      { type: 4, data: expect.objectContaining({ content: NOT_AN_APPROVER, flags: 64 | 4 }) },
    ]);
    // ... or types the command.
    discord.userMessage({
      channelId: CHAN,
      guildId: GUILD,
      content: `<@${discord.bot.id}> /approve ap2`,
      author: BOB,
      mentionsBot: true,
    });
    await answered(discord, CHAN, (t) => t === NOT_AN_APPROVER, "the refusal of /approve");
    expect(decisions).toEqual([]);
    // The owner's press decides.
    const annPress = discord.interaction({
      channelId: CHAN,
      guildId: GUILD,
      user: ANN,
      customId: `approve:ap2:${HASH}`,
    });
    await answered(discord, `interaction:${annPress.token}`, (t) => t === "Approved ap2.", "the approval");
    expect(decisions).toEqual([["ap2", "approved"]]);
  });

  it("deletes a streaming preview the previous run left behind, once connected again", async () => {
    h = await startDiscordHarness();
    const { discord, core } = h;
    // The previous run streamed a preview here and died before the final edit.
    await h.channel.send(CHAN, "half an answer …");
    const id = discord.channelMessages(CHAN)[0]!.id;
    new PreviewLedger(core.db, "discord", () => Date.now()).opened(CHAN, id, undefined, Date.now());
    await h.restart();
    await discord.waitFor(() => discord.channelMessages(CHAN).length === 0, 20_000, "the preview deleted");
    // ... and forgotten (once Discord answered the delete).
    const rows = core.db.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM chat_previews");
    for (let i = 0; i < 200 && rows.get()?.n !== 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(rows.get()?.n).toBe(0);
  });

  it("delivers proactive messages to discord:<channelId> and discord:user:<userId>", async () => {
    h = await startDiscordHarness();
    const { discord, registry } = h;
    await registry.deliver(`discord:${CHAN}`, "hello channel");
    await registry.deliver(`discord:user:${BOB.id}`, "hello Bob");
    await registry.deliver(`discord:user:${BOB.id}`, "again");
    expect(contents(discord, CHAN)).toEqual(["hello channel"]);
    const dm = discord.dmChannels.get(BOB.id) ?? "";
    expect(contents(discord, dm)).toEqual(["hello Bob", "again"]);
    // The DM channel is opened once and remembered.
    expect(discord.callsTo("POST", /^\/users\/@me\/channels$/)).toHaveLength(1);
    const err = await registry.deliver("discord:general", "x").catch((e: unknown) => e);
    expect((err as ChannelError).code).toBe("CHANNEL_UNKNOWN_TARGET");
  });

  it("stops with one clear error on an invalid token while everything else keeps running", async () => {
    h = await startDiscordHarness({ discord: { token: "not-the-token" }, connect: false });
    const { discord, channel, registry } = h;
    await discord.waitFor(() => channel.status().state === "error", 20_000, "the error state");
    expect(channel.status().detail).toMatch(/invalid token/);
    expect(registry.statuses().discord?.state).toBe("error");
    expect(channel.health().state).toBe("error");
    expect(discord.calls.filter((c) => c.status === 401)).toHaveLength(1);
    const err = await channel.send(CHAN, "x").catch((e: unknown) => e);
    expect((err as ChannelError).code).toBe("CHANNEL_NOT_RUNNING");
  });

  it("reconnects when a hot reload fixes the token", async () => {
    h = await startDiscordHarness({ discord: { token: "not-the-token" }, connect: false });
    const { discord, channel, core } = h;
    await discord.waitFor(() => channel.status().state === "error", 20_000, "the error state");
    const cfg = core.ctx.config();
    core.setConfig({
      ...cfg,
      channels: { ...cfg.channels, discord: { ...cfg.channels.discord, token: discord.token } },
    });
    await discord.waitFor(
      () => channel.status().state === "connected",
      20_000,
      "connected with the new token",
    );
    discord.userMessage({ channelId: DM, content: "fixed", author: ANN });
    await answered(discord, DM, (t) => t === "echo: fixed", "the answer");
  });

  it("reports missing privileged intents (gateway close 4014) as one clear error", async () => {
    h = await startDiscordHarness({ start: false });
    const { discord, channel } = h;
    discord.rejectIdentify(4014);
    await channel.start();
    await discord.waitFor(() => channel.status().state === "error", 20_000, "the error state");
    expect(channel.status().detail).toMatch(/MESSAGE CONTENT/);
    expect(discord.gateway.identifies).toBe(0);
  });
});
