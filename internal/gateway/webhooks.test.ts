import { describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { renderTemplate } from "./webhooks.js";
import { safeEqual, verifyHmacSignature } from "./auth.js";

describe("webhook templates", () => {
  it("fills {{body}} and {{json.path}} (arrays too); missing fields become empty", () => {
    const raw = JSON.stringify({ a: { b: "x", n: 3 }, list: [{ name: "first" }] });
    expect(
      renderTemplate("got {{json.a.b}} {{ json.a.n }} {{json.list[0].name}} [{{json.nope.deeper}}]", raw),
    ).toBe("got x 3 first []");
    expect(renderTemplate("raw: {{body}}", "hello")).toBe("raw: hello");
    expect(renderTemplate(undefined, "as is")).toBe("as is");
    expect(renderTemplate("{{json.a}}", "not json")).toBe("");
  });
});

describe("signatures", () => {
  it("verifies sha256=<hex> HMACs and rejects wrong, malformed or missing ones", () => {
    const body = Buffer.from('{"x":1}');
    const good = `sha256=${createHmac("sha256", "k").update(body).digest("hex")}`;
    expect(verifyHmacSignature("k", body, good)).toBe(true);
    expect(verifyHmacSignature("k", body, good.toUpperCase().replace("SHA256", "sha256"))).toBe(true);
    expect(verifyHmacSignature("other", body, good)).toBe(false);
    expect(verifyHmacSignature("k", Buffer.from('{"x":2}'), good)).toBe(false);
    expect(verifyHmacSignature("k", body, "sha256=abc")).toBe(false);
    expect(verifyHmacSignature("k", body, undefined)).toBe(false);
  });

  it("compares tokens of any length without throwing", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abcd")).toBe(false);
    expect(safeEqual("", "x")).toBe(false);
  });
});
