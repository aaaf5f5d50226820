/**
 * DeferredChannel: the stand-in the daemon registers for a channel whose module loads after start.
 * Real parts: the in-memory reference channel behind it, a real dynamic import for the failure case.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../log/logger.js";
import { DeferredChannel, type ServiceChannel } from "./deferred-channel.js";
import { MemoryChannel } from "./memory-channel.js";
import { ChannelError } from "./channel.js";

function serviceChannel(id: string): MemoryChannel & ServiceChannel {
  return Object.assign(new MemoryChannel(id), { name: id, health: () => ({ state: "ok" as const }) });
}

describe("DeferredChannel", () => {
  it("says starting until ready, then forwards status and delivery to the loaded channel", async () => {
    const real = serviceChannel("memo");
    let begin: (() => void) | undefined;
    const d = new DeferredChannel(
      "memo",
      async () => real,
      silentLogger(),
      (b) => (begin = b),
    );
    await d.start();
    expect(d.status().state).toBe("starting");
    expect(d.health().state).toBe("starting");
    expect(d.loaded).toBeUndefined();
    // A delivery queued before the daemon is ready waits for the channel instead of failing.
    const sending = d.send("chat-1", "queued early");
    begin?.();
    await sending;
    expect(real.sent.map((m) => m.text)).toEqual(["queued early"]);
    expect(d.status().state).toBe("connected");
    expect(d.health().state).toBe("ok");
    await d.stop();
    expect(real.status().state).toBe("stopped");
  });

  it("never starts a channel when stopped before it loaded", async () => {
    const real = serviceChannel("memo");
    let begin: (() => void) | undefined;
    const d = new DeferredChannel(
      "memo",
      async () => real,
      silentLogger(),
      (b) => (begin = b),
    );
    await d.start();
    await d.stop();
    begin?.();
    expect(await d.ready()).toBeUndefined();
    expect(real.status().state).toBe("stopped");
    await expect(d.send("chat-1", "late")).rejects.toBeInstanceOf(ChannelError);
  });

  it("reports a module that fails to load as an error, and refuses delivery clearly", async () => {
    const d = new DeferredChannel(
      "broken",
      async () => (await import("./no-such-channel-module.js" as string)) as ServiceChannel,
      silentLogger(),
    );
    await d.start();
    await d.ready();
    expect(d.status().state).toBe("error");
    expect(d.status().detail).toMatch(/could not start the broken channel/);
    await expect(d.send("x", "y")).rejects.toMatchObject({ code: "CHANNEL_NOT_RUNNING" });
  });

  it("stays off without loading while disabled, and loads and starts when a reload enables it", async () => {
    const real = serviceChannel("memo");
    let enabled = false;
    let loads = 0;
    const listeners = new Set<() => void>();
    const joined: string[] = [];
    const d = new DeferredChannel(
      "memo",
      async () => {
        loads++;
        return real;
      },
      silentLogger(),
      undefined,
      {
        enabled: () => enabled,
        onConfig: (fn) => {
          listeners.add(fn);
          return () => listeners.delete(fn);
        },
        onEnabled: (ch) => joined.push(ch.id),
      },
    );
    await d.start();
    expect(d.status()).toMatchObject({ state: "disabled", detail: "channels.memo.enabled is false" });
    expect(d.health().state).toBe("disabled");
    await expect(d.send("chat-1", "early")).rejects.toMatchObject({ code: "CHANNEL_NOT_RUNNING" });
    // A reload that changes something else leaves it off.
    for (const fn of listeners) fn();
    expect(await d.ready()).toBeUndefined();
    expect(loads).toBe(0);
    expect(joined).toEqual([]);
    enabled = true;
    for (const fn of [...listeners]) fn();
    for (const fn of [...listeners]) fn();
    expect(await d.ready()).toBe(real);
    expect(loads).toBe(1);
    expect(joined).toEqual(["memo"]);
    expect(d.status().state).toBe("connected");
    await d.send("chat-1", "now");
    expect(real.sent.map((m) => m.text)).toEqual(["now"]);
    await d.stop();
    expect(listeners.size).toBe(0);
    expect(real.status().state).toBe("stopped");
  });

  it("joins the registry at construction when enabled, so deliveries before start wait for it", async () => {
    const real = serviceChannel("memo");
    const joined: string[] = [];
    const d = new DeferredChannel("memo", async () => real, silentLogger(), undefined, {
      enabled: () => true,
      onConfig: () => () => undefined,
      onEnabled: (ch) => joined.push(ch.id),
    });
    expect(joined).toEqual(["memo"]);
    expect(d.status().state).toBe("starting");
    await d.start();
    await d.ready();
    expect(joined).toEqual(["memo"]);
    await d.stop();
  });
});
