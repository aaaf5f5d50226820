import { describe, expect, it } from "vitest";
import { configFromObject } from "../config/load.js";
import { unpricedModels, unpricedWarning } from "./unpriced.js";

const providers = { p: { base_url: "http://127.0.0.1:9/v1" } };

describe("unpriced models", () => {
  it("lists every configured model without a price, background models included", () => {
    const cfg = configFromObject(
      {
        models: {
          providers,
          primary: "p/big",
          fallbacks: ["p/small"],
          pricing: { "p/big": { input: 1, output: 2 } },
        },
        heartbeat: { model: "p/cheap" },
        agents: { defaults: { compact: { summary_model: "p/small" } }, coder: { model: "p/coder" } },
        cron: { jobs: [{ id: "j", every: "1h", message: "m", model: "p/nightly" }] },
      },
      "/tmp",
    );
    expect(unpricedModels(cfg).sort()).toEqual(["p/cheap", "p/coder", "p/nightly", "p/small"]);
    expect(unpricedWarning(cfg)).toMatch(
      /count at the default price \(\$5 input \/ \$15 output per 1M tokens/,
    );
  });

  it("says nothing when only the free echo model answers", () => {
    expect(unpricedWarning(configFromObject({}, "/tmp"))).toBeUndefined();
  });

  it("names the key and what was expected for a bad budget", () => {
    expect(() => configFromObject({ budgets: { overall: { daily_usd: -1 } } }, "/tmp")).toThrow(
      /budgets\.overall\.daily_usd.*greater than 0/,
    );
  });
});
