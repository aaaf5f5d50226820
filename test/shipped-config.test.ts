/**
 * The built-in config template (internal/config/config-template.yaml: what `familiar init` writes, and
 * what the repository's config.yaml started as) is the documentation of every key: they must parse as is (no environment
 * needed) and mention every key of the schema. The owner's own config.yaml is never read here, so
 * editing it (a port, a provider) cannot fail the suite.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { parseConfigText } from "../internal/config/load.js";
import { configSchema } from "../internal/config/schema.js";
import { REPO_ROOT } from "./helpers/daemon.js";

const text = readFileSync(join(REPO_ROOT, "internal/config/config-template.yaml"), "utf8");

/** Every key path of the schema, e.g. `gateway.port`, `models.providers.<id>.base_url`. */
function schemaKeys(): string[] {
  const out: string[] = [];
  const unwrap = (s: z.core.$ZodType): z.core.$ZodType => {
    let cur = s;
    for (let i = 0; i < 20; i++) {
      const def = cur._zod.def as unknown as Record<string, unknown>;
      const next = (def.innerType ?? (def.type === "pipe" ? def.in : undefined)) as
        z.core.$ZodType | undefined;
      if (!next) break;
      cur = next;
    }
    return cur;
  };
  const walk = (schema: z.core.$ZodType, path: string): void => {
    const def = unwrap(schema)._zod.def as unknown as Record<string, unknown>;
    if (def.type === "object") {
      for (const [k, v] of Object.entries(def.shape as Record<string, z.core.$ZodType>)) {
        const p = path ? `${path}.${k}` : k;
        out.push(p);
        walk(v, p);
      }
      if (def.catchall) walk(def.catchall as z.core.$ZodType, `${path}.<id>`);
    } else if (def.type === "record") walk(def.valueType as z.core.$ZodType, `${path}.<id>`);
    else if (def.type === "array") walk(def.element as z.core.$ZodType, `${path}[]`);
    else if (def.type === "union") for (const o of def.options as z.core.$ZodType[]) walk(o, path);
  };
  walk(configSchema, "");
  return [...new Set(out)];
}

describe("the built-in config template", () => {
  it("parses as is, with an empty environment", () => {
    // As `familiar init` writes it: config.yaml in the owner's directory, paths relative to it.
    const loaded = parseConfigText(text, join(REPO_ROOT, "config.yaml"), {});
    expect(loaded.config.gateway).toMatchObject({ bind: "127.0.0.1", port: 18790, enabled: true });
    expect(loaded.config.data_dir).toBe(join(REPO_ROOT, "data"));
    expect(loaded.config.workspace).toBe(join(REPO_ROOT, "workspace"));
    // No provider: the daemon falls back to the offline echo model.
    expect(loaded.config.models.providers).toEqual({});
    expect(loaded.config.channels.telegram.enabled).toBe(false);
  });

  it("states the schema's defaults (parsing it equals parsing an empty file)", () => {
    const shipped = parseConfigText(text, "/x/config.yaml", {}).config;
    const empty = parseConfigText("", "/x/config.yaml", {}).config;
    expect(shipped).toEqual(empty);
  });

  it("mentions every top-level key uncommented", () => {
    const top = Object.keys((configSchema._zod.def as unknown as { shape: object }).shape);
    const missing = top.filter((k) => !new RegExp(`^${k}:`, "m").test(text) && k !== "timezone");
    expect(missing, `add these keys to internal/config/config-template.yaml: ${missing.join(", ")}`).toEqual(
      [],
    );
    expect(text).toMatch(/^# timezone:/m);
  });

  it("documents every key of the schema (commented or not)", () => {
    const missing = schemaKeys().filter((p) => {
      const leaf = p.split(".").at(-1)!.replace(/\[\]$/, "");
      return !new RegExp(`(^|[\\s{,#-])${leaf}:`, "m").test(text);
    });
    expect(
      missing,
      `document these keys in internal/config/config-template.yaml: ${missing.join(", ")}`,
    ).toEqual([]);
  });

  it("its commented examples are valid (test/fixtures/config-examples.yaml collects them)", () => {
    const examples = readFileSync(join(REPO_ROOT, "test/fixtures/config-examples.yaml"), "utf8");
    const env = {
      OPENAI_API_KEY: "sk-x",
      OPENROUTER_API_KEY: "sk-or",
      FAMILIAR_GATEWAY_TOKEN: "t",
      GITHUB_HOOK_TOKEN: "g",
      GITHUB_HOOK_SECRET: "h",
    };
    const more = {
      TELEGRAM_BOT_TOKEN: "1:x",
      TELEGRAM_WEBHOOK_SECRET: "w",
      DISCORD_BOT_TOKEN: "d",
      MCP_TOKEN: "m",
    };
    const { config } = parseConfigText(examples, "/x/config.yaml", { ...env, ...more });
    expect(config.models.primary).toBe("openai/gpt-4o-mini");
    expect(config.cron.jobs.map((j) => j.id)).toEqual(["morning-brief", "stretch", "call-mum"]);
    // Every example value that is a secret comes from the environment.
    for (const line of text.split("\n"))
      if (/^\s*#?\s*(api_key|token|secret|hmac_secret):/.test(line)) expect(line).toContain("${");
  });
});
