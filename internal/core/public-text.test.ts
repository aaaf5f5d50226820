import { describe, expect, it } from "vitest";
import { withoutAddresses } from "./public-text.js";

describe("withoutAddresses", () => {
  it("removes the provider's address from the daemon's network errors, keeping the code and the advice", () => {
    const refused =
      "cannot reach f/m at http://127.0.0.1:41809/v1 (ECONNREFUSED): connect ECONNREFUSED 127.0.0.1:41809; " +
      "connection refused by 127.0.0.1:41809: is the server running? Check models.providers.f.base_url";
    const out = withoutAddresses(refused);
    expect(out).not.toMatch(/127\.0\.0\.1|41809/);
    expect(out).toContain("(ECONNREFUSED): connect ECONNREFUSED;");
    expect(out).toContain("connection refused by (the model provider): is the server running?");
    expect(out).toContain("models.providers.f.base_url");
    const dns = withoutAddresses(
      "cannot reach g/m at https://gpu-box.corp.invalid:8443/v1 (ENOTFOUND): getaddrinfo ENOTFOUND gpu-box.corp.invalid; " +
        "host gpu-box.corp.invalid not found: check models.providers.g.base_url and the network",
    );
    expect(dns).not.toMatch(/gpu-box|corp\.invalid|8443/);
    expect(dns).toContain("getaddrinfo ENOTFOUND;");
    expect(dns).toContain("host not found: check models.providers.g.base_url");
  });

  it("removes IP literals, bracketed IPv6 and host:port anywhere", () => {
    expect(withoutAddresses("socket hang up at 10.1.2.3")).toBe("socket hang up at (the model provider)");
    expect(withoutAddresses("connect ETIMEDOUT [fd00::5]:11434")).toBe("connect ETIMEDOUT");
    expect(withoutAddresses("reset by [::1]:9 now")).toBe("reset by (the model provider) now");
    expect(withoutAddresses("localhost:11434 closed the connection: check it")).toBe(
      "(the model provider) closed the connection: check it",
    );
    expect(withoutAddresses("gpu-box:8080 closed the connection")).toBe(
      "(the model provider) closed the connection",
    );
  });

  it("leaves ordinary text alone", () => {
    const plain = "the prompt is too long for f/m: 12000 tokens; see config.yaml agents.main.context_window";
    expect(withoutAddresses(plain)).toBe(plain);
  });
});
