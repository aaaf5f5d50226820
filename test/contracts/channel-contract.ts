/**
 * The ONE contract suite for the Channel interface (internal/channels/channel.ts). Every channel
 * implementation runs it: the in-memory test channel, Telegram, Discord.
 *
 * Usage (inside a vitest file): `runChannelContract("telegram", async () => harness)`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ChannelError, type Channel } from "../../internal/channels/channel.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";

/** What the suite needs to drive and observe one channel. */
export interface ChannelHarness {
  /** Not started yet. */
  channel: Channel;
  /** A target (the part after `<id>:`) whose deliveries `delivered` can see. */
  target: string;
  /** Visible texts that reached `target`, in order (markup removed). */
  delivered(): string[];
  /** A syntactically invalid target, when the channel validates targets. */
  invalidTarget?: string;
  /** Makes the remote refuse every following delivery. */
  failDelivery?(): void;
  /** Frees servers, databases and temp dirs. */
  cleanup(): Promise<void>;
}

async function until(pred: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Registers the contract tests for one implementation. */
export function runChannelContract(name: string, factory: () => Promise<ChannelHarness>): void {
  describe(`channel contract: ${name}`, () => {
    let h: ChannelHarness | undefined;
    const started = async (): Promise<ChannelHarness> => {
      h = await factory();
      await h.channel.start();
      await until(() => h?.channel.status().state === "connected", `${name} connected`);
      return h;
    };
    afterEach(async () => {
      if (h) {
        await h.channel.stop().catch(() => undefined);
        await h.cleanup();
      }
      h = undefined;
    });

    it("has a target-prefix id and is not connected before start", async () => {
      h = await factory();
      expect(h.channel.id).toMatch(/^[a-z][a-z0-9_-]*$/);
      expect(h.channel.status().state).not.toBe("connected");
      expect(typeof h.channel.status().since).toBe("number");
    });

    it("reports connected after start and delivers a message to a target", async () => {
      const x = await started();
      await x.channel.send(x.target, "hello from the contract suite");
      await until(() => x.delivered().length === 1, "delivery");
      expect(x.delivered()[0]).toContain("hello from the contract suite");
    });

    it("delivers through the registry with `<id>:<target>` and keeps order", async () => {
      const x = await started();
      const reg = new ChannelRegistry();
      reg.add(x.channel);
      for (let i = 1; i <= 3; i++) await reg.deliver(`${x.channel.id}:${x.target}`, `message number ${i}`);
      await until(() => x.delivered().length === 3, "three deliveries");
      expect(x.delivered().map((t) => /message number (\d)/.exec(t)?.[1])).toEqual(["1", "2", "3"]);
    });

    it("delivers a long markdown text completely", async () => {
      const x = await started();
      const words = Array.from({ length: 1500 }, (_, i) => `w${i}`);
      const text = `# Report\n\n${words.join(" ")}\n\n\`\`\`ts\nconst answer = 42;\n\`\`\``;
      await x.channel.send(x.target, text);
      await until(() => x.delivered().join(" ").includes("const answer = 42;"), "whole text");
      const all = x.delivered().join(" ");
      for (const w of [words[0], words[700], words[1499]]) expect(all).toMatch(new RegExp(`\\b${w}\\b`));
    });

    it("accepts approval buttons and silent delivery", async () => {
      const x = await started();
      await x.channel.send(x.target, "Run `ls`?", { approvalId: "ap1", silent: true, markdown: true });
      await until(() => x.delivered().length === 1, "approval delivery");
      expect(x.delivered()[0]).toContain("ls");
    });

    it("rejects an invalid target with a ChannelError", async () => {
      const x = await started();
      if (!x.invalidTarget) return;
      const err = await x.channel.send(x.invalidTarget, "x").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
    });

    it("rejects with a ChannelError when the remote refuses", async () => {
      const x = await started();
      if (!x.failDelivery) return;
      x.failDelivery();
      const err = await x.channel.send(x.target, "will fail").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect(["CHANNEL_REFUSED", "CHANNEL_UNREACHABLE"]).toContain((err as ChannelError).code);
    });

    it("is stopped after stop and refuses to send with CHANNEL_NOT_RUNNING", async () => {
      const x = await started();
      await x.channel.stop();
      expect(x.channel.status().state).toBe("stopped");
      const err = await x.channel.send(x.target, "after stop").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChannelError);
      expect((err as ChannelError).code).toBe("CHANNEL_NOT_RUNNING");
    });
  });
}
