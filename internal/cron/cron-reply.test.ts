/**
 * Where a reminder's reply goes when the chat it was asked in cannot take it (issue 47): the owner's
 * `owner.preferred_channel`, validated with an error naming the key. The real scheduler and agent
 * host on a FakeClock, the fake model, the in-memory channel standing in for Telegram; no gateway
 * (a daemon with `gateway.enabled: false` has no web chat to post into).
 */
import { describe, expect, it } from "vitest";
import {
  schedulerSuite,
  startHarness,
  until,
  type SchedulerHarness,
} from "../../test/helpers/scheduler-harness.js";
import { FakeClock } from "../core/clock.js";
import { MemoryChannel } from "../channels/memory-channel.js";
import { parseConfigText } from "../config/load.js";
import { ConfigError } from "../config/errors.js";
import { createCronService } from "./cron-service.js";
import { createCronTool } from "./cron-tool.js";
import type { ToolContext } from "../tools/tool.js";

const suite = schedulerSuite();

async function setup(config: Record<string, unknown>) {
  const h = await startHarness(suite.fake, config);
  const telegram = new MemoryChannel("telegram");
  await telegram.start();
  h.channels.add(telegram);
  const svc = createCronService(h.core.ctx, { host: h.host, outbox: h.channels, pollClock: new FakeClock() });
  await svc.start();
  suite.keep(h, svc);
  return { h, svc, telegram };
}

/** The context of a turn in the web chat session `web-1` (a gateway session: no channel target). */
function webTurn(h: SchedulerHarness): ToolContext {
  return {
    sessionKey: "agent:main:gateway:web-1",
    sessionId: "s-web-1",
    agentId: "main",
    workspace: h.core.dir,
    requestId: "r-1",
    depth: 0,
    logger: h.core.ctx.logger,
    requestApproval: () => Promise.resolve("denied"),
  };
}

describe("owner.preferred_channel", () => {
  it("takes a web chat reminder when no web chat can show it, and a CLI one", async () => {
    const { h, svc, telegram } = await setup({ owner: { preferred_channel: "telegram:42" } });
    const tool = createCronTool(svc);
    const added = await tool.execute(
      { action: "add", id: "stretch", message: "Stretch.", at: "in 2 minutes" },
      new AbortController().signal,
      webTurn(h),
    );
    expect(typeof added === "string" ? added : added.content).toContain("deliver=origin");
    expect(svc.get("stretch")?.origin).toEqual({ kind: "chat", sessionKey: "agent:main:gateway:web-1" });
    svc.add(
      { id: "cli-job", message: "Water.", at: "2026-01-01T00:03:00Z", deliver: "origin" },
      { kind: "cli" },
    );

    suite.fake.enqueue({ text: "Time to stretch." }, { text: "Water the plants." });
    await h.clock.advance(3 * 60_000);
    await until(() => telegram.sent.length === 2, "both replies on telegram");
    expect(telegram.sent.map((m) => [m.target, m.text])).toEqual([
      ["42", "Time to stretch."],
      ["42", "Water the plants."],
    ]);
    expect(svc.runs("stretch")[0]).toMatchObject({ status: "ok", delivered: true });
    expect(svc.list().every((j) => j.undeliveredRun === null)).toBe(true);
  });

  it("as a bare channel name is the owner's private chat there", async () => {
    const { h, svc, telegram } = await setup({
      owner: { preferred_channel: "telegram" },
      channels: { telegram: { owner: [777] } },
    });
    svc.add({ id: "j", message: "Hi.", at: "2026-01-01T00:01:00Z", deliver: "origin" }, { kind: "cli" });
    suite.fake.enqueue({ text: "Hello owner." });
    await h.clock.advance(60_000);
    await until(() => telegram.sent.length === 1, "the reply on telegram");
    expect(telegram.sent[0]).toMatchObject({ target: "777", text: "Hello owner." });
  });

  it("is refused with an error naming the key when it names no channel or no chat", () => {
    const bad = (yaml: string): string => {
      try {
        parseConfigText(yaml, "/cfg/config.yaml", {});
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    expect(bad("owner:\n  preferred_channel: signal\n")).toMatch(
      /owner\.preferred_channel: expected telegram, discord or a target such as telegram:123456, got "signal"/,
    );
    expect(bad("owner:\n  preferred_channel: discord\n")).toMatch(
      /owner\.preferred_channel: "discord" names no chat: channels\.discord\.owner \(or allow_from\) is empty/,
    );
    expect(
      parseConfigText("owner:\n  preferred_channel: telegram:123\n", "/cfg/config.yaml", {}).config.owner,
    ).toEqual({ preferred_channel: "telegram:123" });
  });
});
