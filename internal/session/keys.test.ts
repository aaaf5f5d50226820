import { describe, expect, it } from "vitest";
import { agentOfKey, parseSessionKey, sessionKeys } from "./keys.js";

describe("session keys", () => {
  it("builds every shape and parses it back", () => {
    const cases = [
      [
        sessionKeys.dm("main", "telegram", 4242),
        { kind: "dm", agentId: "main", channel: "telegram", peerId: "4242" },
      ],
      [
        sessionKeys.group("main", "telegram", -100123),
        { kind: "group", agentId: "main", channel: "telegram", chatId: "-100123" },
      ],
      [
        sessionKeys.group("helper", "discord", "g1", 77),
        { kind: "group", agentId: "helper", channel: "discord", chatId: "g1", threadId: "77" },
      ],
      [sessionKeys.gateway("main", "web"), { kind: "gateway", agentId: "main", name: "web" }],
      [sessionKeys.cron("daily-report"), { kind: "cron", jobId: "daily-report" }],
      [sessionKeys.heartbeat(), { kind: "heartbeat" }],
    ] as const;
    for (const [key, parts] of cases) expect(parseSessionKey(key)).toEqual(parts);
    expect(sessionKeys.dm("main", "telegram", 4242)).toBe("agent:main:telegram:dm:4242");
    expect(sessionKeys.group("helper", "discord", "g1", 77)).toBe("agent:helper:discord:group:g1:thread:77");
    expect(sessionKeys.gateway("main", "web")).toBe("agent:main:gateway:web");
    expect(sessionKeys.cron("daily-report")).toBe("cron:daily-report");
    expect(agentOfKey("agent:helper:discord:group:g1")).toBe("helper");
    expect(agentOfKey("cron:x")).toBeUndefined();
  });

  it("refuses parts with ':' or spaces, naming the part, and parses unknown shapes as other", () => {
    expect(() => sessionKeys.dm("main", "telegram", "a:b")).toThrow(/invalid peer id in session key: "a:b"/);
    expect(() => sessionKeys.gateway("my agent", "x")).toThrow(/invalid agent id/);
    expect(() => sessionKeys.cron("")).toThrow(/invalid job id/);
    for (const key of ["agent:main:telegram:dm", "agent:main:x:group:1:topic:2", "cron:a:b", "weird"])
      expect(parseSessionKey(key)).toEqual({ kind: "other", key });
  });
});
