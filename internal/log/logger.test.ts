import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { collectSecrets } from "../daemon/secrets.js";
import { createLogger, SecretScrubber } from "./logger.js";

function capture(): { sink: Writable; lines: () => string[] } {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      cb();
    },
  });
  return { sink, lines: () => out };
}

describe("logger", () => {
  it("writes one JSON object per line with level label, time and message", () => {
    const { sink, lines } = capture();
    const log = createLogger({ destination: sink, pretty: false });
    log.info({ service: "store" }, "store opened");
    expect(lines()).toHaveLength(1);
    const o = JSON.parse(lines()[0]!) as Record<string, unknown>;
    expect(o).toMatchObject({ level: "info", msg: "store opened", service: "store" });
    expect(typeof o.time).toBe("string");
  });

  it("redacts secrets by key path at any common depth", () => {
    const { sink, lines } = capture();
    const log = createLogger({ destination: sink, pretty: false });
    log.info(
      {
        api_key: "k0",
        provider: { api_key: "k1", base_url: "https://api.example.com/v1" },
        channels: { telegram: { token: "k2" } },
        models: { providers: { openai: { api_key: "k3" } } },
        headers: { authorization: "Bearer k4", Authorization: "Bearer k5" },
        req: { password: "k6", secret: "k7" },
      },
      "dump",
    );
    const line = lines()[0]!;
    for (const s of ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]) expect(line).not.toContain(`"${s}`);
    expect(line).toContain("https://api.example.com/v1");
    expect(line.match(/\[REDACTED\]/g)).toHaveLength(8);
  });

  it("redacts by key at the depths the paths reach, not deeper, and never touches the caller's object", () => {
    const { sink, lines } = capture();
    const log = createLogger({ destination: sink, pretty: false });
    const obj = {
      a: { b: { c: { token: "d4", api_key: "d4k", password: "d4p" } } },
      x: { y: { z: { w: { token: "d5" } } } },
      list: [{ secret: "in-array" }],
      n: 42,
      s: "plain",
    };
    const before = JSON.stringify(obj);
    log.info(obj, "deep");
    const o = JSON.parse(lines()[0]!) as typeof obj;
    expect(o.a.b.c).toEqual({ token: "[REDACTED]", api_key: "[REDACTED]", password: "d4p" });
    expect(o.x.y.z.w.token).toBe("d5");
    expect(o.list[0]!.secret).toBe("[REDACTED]");
    expect(o.n).toBe(42);
    expect(o.s).toBe("plain");
    expect(JSON.stringify(obj)).toBe(before);
  });

  it("redacts child bindings and secret fields of a logged error, keeping its message and stack", () => {
    const { sink, lines } = capture();
    const log = createLogger({ destination: sink, pretty: false }).child({
      module: "telegram",
      token: "bound-secret",
    });
    const err = Object.assign(new Error("upstream said no"), {
      request: { token: "leaked" },
    });
    log.error({ err }, "failed");
    const line = lines()[0]!;
    expect(line).not.toContain("bound-secret");
    expect(line).not.toContain("leaked");
    const o = JSON.parse(line) as { module: string; err: { message: string; stack: string; type: string } };
    expect(o.module).toBe("telegram");
    expect(o.err.message).toBe("upstream said no");
    expect(o.err.type).toBe("Error");
    expect(o.err.stack).toContain("upstream said no");
  });

  it("scrubs known secret values wherever they appear, e.g. inside an error message", () => {
    const { sink, lines } = capture();
    const scrubber = new SecretScrubber();
    const cfg = configFromObject({
      models: {
        providers: { openai: { base_url: "https://api.openai.com/v1", api_key: "sk-live-abcdef123" } },
      },
      channels: { telegram: { token: "123456:telegram-secret-token" } },
      gateway: { token: "gw-token-xyz" },
    });
    scrubber.set(collectSecrets(cfg));
    const log = createLogger({ destination: sink, pretty: false, scrubber });
    log.error(
      { err: new Error("401 from https://api.telegram.org/bot123456:telegram-secret-token/getMe") },
      "request with key sk-live-abcdef123 failed",
    );
    log.info({ note: "ws://127.0.0.1/ws?token=gw-token-xyz" }, "hello");
    const text = lines().join("\n");
    expect(text).not.toContain("sk-live-abcdef123");
    expect(text).not.toContain("telegram-secret-token");
    expect(text).not.toContain("gw-token-xyz");
    expect(text).toContain("request with key [REDACTED] failed");
    expect(text).toContain("/bot[REDACTED]/getMe");
  });

  it("updates the scrubbed set on reload and ignores values too short to be secrets", () => {
    const s = new SecretScrubber();
    s.set(["old-secret-1", "abc", undefined]);
    expect(s.scrub("old-secret-1 abc")).toBe("[REDACTED] abc");
    s.set(["new-secret-2"]);
    expect(s.scrub("old-secret-1 new-secret-2")).toBe("old-secret-1 [REDACTED]");
  });

  it("replaces the longest secret first when one contains another", () => {
    const s = new SecretScrubber();
    s.set(["secret", "secret-and-more"]);
    expect(s.scrub("x secret-and-more y secret")).toBe("x [REDACTED] y [REDACTED]");
  });

  it("changes level at runtime (hot reload of log.level)", () => {
    const { sink, lines } = capture();
    const log = createLogger({ destination: sink, pretty: false, level: "warn" });
    log.info("hidden");
    log.level = "debug";
    log.debug("shown");
    expect(lines().map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["shown"]);
  });

  it("pretty mode prints a readable line and still scrubs", () => {
    const { sink, lines } = capture();
    const scrubber = new SecretScrubber();
    scrubber.set(["hunter2-secret"]);
    const log = createLogger({ destination: sink, pretty: true, scrubber });
    log.warn({ module: "gateway", key: "hunter2-secret" }, "careful");
    expect(lines()[0]).toMatch(/^\d\d:\d\d:\d\d WARN {2}\[gateway\] careful \{"key":"\[REDACTED\]"\}$/);
  });
});
