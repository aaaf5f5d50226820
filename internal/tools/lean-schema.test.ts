import { describe, expect, it } from "vitest";
import { z } from "zod";
import { leanJsonSchema } from "./lean-schema.js";

describe("leanJsonSchema", () => {
  const schema = z
    .object({
      path: z.string().min(1).describe("file path"),
      start_line: z.number().int().min(1).optional(),
      mode: z.enum(["sync", "async"]).default("sync"),
      maximum: z.number().int().max(10).describe("a field that happens to be called maximum"),
      nested: z.object({ depends_on: z.array(z.string()).default([]) }).strict(),
    })
    .strict();

  it("exports the input shape: fields with defaults are optional and keep their default", () => {
    const js = leanJsonSchema(schema) as {
      required: string[];
      properties: Record<string, { default?: unknown; required?: string[] }>;
    };
    expect(js.required).toEqual(["path", "maximum", "nested"]);
    expect(js.properties.mode?.default).toBe("sync");
    expect(js.properties.nested?.required ?? []).toEqual([]);
  });

  it("drops the safe-integer bounds, additionalProperties:false and $schema, and nothing else", () => {
    const js = leanJsonSchema(schema);
    const text = JSON.stringify(js);
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
    expect(text).not.toContain("additionalProperties");
    expect(text).not.toContain("$schema");
    const props = js.properties as Record<string, Record<string, unknown>>;
    expect(props.start_line).toEqual({ type: "integer", minimum: 1 });
    // A property named like an annotation is data and survives, with its own real bound.
    expect(props.maximum).toMatchObject({ type: "integer", maximum: 10 });
    expect(props.path).toMatchObject({ type: "string", minLength: 1, description: "file path" });
  });

  it("is shorter than zod's default export", () => {
    const full = JSON.stringify(z.toJSONSchema(schema));
    expect(JSON.stringify(leanJsonSchema(schema)).length).toBeLessThan(full.length);
  });
});
