/**
 * The daemon's budget wiring logs the unpriced-model warning at start and again when a reload changes
 * it, and not again for an unchanged reload.
 */
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../log/logger.js";
import { UsageTracker } from "../agent/usage/usage-tracker.js";
import { createTestCore, type TestCore } from "../../test/helpers/core.js";
import { createBudgets } from "./budget-service.js";

let core: TestCore | undefined;
afterEach(() => core?.close());

const models = (pricing: Record<string, unknown>) => ({
  providers: { p: { base_url: "http://127.0.0.1:9/v1" } },
  primary: "p/big",
  pricing,
});

describe("budget service", () => {
  it("warns at start about unpriced models, and again only when that changes", () => {
    core = createTestCore({ models: models({}) });
    const lines: string[] = [];
    const out = new PassThrough();
    out.on("data", (d: Buffer) => lines.push(String(d)));
    const ctx = { ...core.ctx, logger: createLogger({ destination: out, level: "warn" }) };
    createBudgets(ctx, {
      usage: new UsageTracker({ db: ctx.db, config: ctx.config }),
      deliver: () => Promise.resolve(),
    });
    expect(lines.join("")).toMatch(/no price for p\/big in models\.pricing/);
    const before = lines.length;
    core.setConfig({ models: models({}), log: { level: "silent" } });
    expect(lines.length).toBe(before); // same models, same warning: not repeated
    core.setConfig({ models: models({ "p/big": { input: 1, output: 2 } }) });
    core.setConfig({ models: { ...models({ "p/big": { input: 1, output: 2 } }), fallbacks: ["p/new"] } });
    expect(lines.slice(before).join("")).toMatch(/no price for p\/new/);
  });
});
