import { describe, expect, it } from "vitest";
import { classifyModelError, retryAfterMs } from "./classify-error.js";

const api = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`${status} ${String(error.message)}`), {
    status,
    error,
    code: error.code,
    headers: new Headers(headers),
  });
const origin = { provider: "openai", model: "gpt-4o" };

describe("classifyModelError", () => {
  it.each([
    [401, {}, "MODEL_AUTH"],
    [403, {}, "MODEL_AUTH"],
    [400, { message: "Invalid value for 'tools'" }, "MODEL_BAD_REQUEST"],
    [404, { message: "The model does not exist" }, "MODEL_BAD_REQUEST"],
    [422, { message: "unprocessable" }, "MODEL_BAD_REQUEST"],
    [
      400,
      { message: "This model's maximum context length is 8192 tokens", code: "context_length_exceeded" },
      "MODEL_CONTEXT_OVERFLOW",
    ],
    [400, { message: "prompt is too long: 210000 tokens > 200000 maximum" }, "MODEL_CONTEXT_OVERFLOW"],
    [413, { message: "Request too large: too many tokens" }, "MODEL_CONTEXT_OVERFLOW"],
    [429, { message: "slow down" }, "MODEL_RATE_LIMIT"],
    [500, {}, "MODEL_SERVER"],
    [503, {}, "MODEL_SERVER"],
    [408, {}, "MODEL_TIMEOUT"],
  ] as const)("HTTP %i %o -> %s", (status, error, code) => {
    const e = classifyModelError(api(status, { message: "x", ...error }), origin);
    expect(e.code).toBe(code);
    expect(e.info).toMatchObject({ provider: "openai", model: "gpt-4o", status });
    expect(e.message).toContain("openai/gpt-4o");
  });

  it("reads retry-after seconds, retry-after-ms and HTTP dates", () => {
    expect(classifyModelError(api(429, {}, { "retry-after": "3" })).info.retryAfterMs).toBe(3000);
    expect(
      classifyModelError(api(429, {}, { "retry-after-ms": "250", "retry-after": "3" })).info.retryAfterMs,
    ).toBe(250);
    const now = Date.UTC(2026, 0, 1);
    expect(retryAfterMs({ "retry-after": new Date(now + 10_000).toUTCString() }, now)).toBe(10_000);
    expect(retryAfterMs({ "retry-after": "soon" })).toBeUndefined();
  });

  it("network failures are MODEL_UNREACHABLE, found through the cause chain", () => {
    const refused = new TypeError("fetch failed", {
      cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }),
    });
    const wrapped = Object.assign(new Error("Connection error."), {
      name: "APIConnectionError",
      cause: refused,
    });
    expect(classifyModelError(wrapped, origin).code).toBe("MODEL_UNREACHABLE");
    const dns = Object.assign(new Error("getaddrinfo ENOTFOUND nope.invalid"), { code: "ENOTFOUND" });
    expect(classifyModelError(dns).code).toBe("MODEL_UNREACHABLE");
    expect(classifyModelError(new TypeError("terminated")).code).toBe("MODEL_UNREACHABLE");
  });

  it("timeouts, aborts, parse errors and in-stream errors", () => {
    expect(
      classifyModelError(
        Object.assign(new Error("Request timed out."), { name: "APIConnectionTimeoutError" }),
      ).code,
    ).toBe("MODEL_TIMEOUT");
    expect(
      classifyModelError(Object.assign(new Error("Request was aborted."), { name: "APIUserAbortError" }))
        .code,
    ).toBe("MODEL_ABORTED");
    expect(classifyModelError(new SyntaxError("Unterminated string in JSON at position 80")).code).toBe(
      "MODEL_BAD_STREAM",
    );
    const inStream = Object.assign(new Error("overloaded"), {
      error: { message: "Overloaded", type: "server_error" },
    });
    expect(classifyModelError(inStream).code).toBe("MODEL_SERVER");
    const inStreamOverflow = Object.assign(new Error("x"), {
      error: { message: "input is too long for requested model", code: "context_length_exceeded" },
    });
    expect(classifyModelError(inStreamOverflow).code).toBe("MODEL_CONTEXT_OVERFLOW");
  });
});
