import { describe, expect, it } from "vitest";
import { ExportFormatError, modelKey, parseCsv, parseExport } from "./provider-export.js";

describe("provider usage exports", () => {
  it("reads OpenAI's cost export per day and model, quoted line items included", () => {
    const csv =
      "start_time,end_time,amount_value,amount_currency,line_item,project_id,organization_id\n" +
      '1773100800,1773187200,0.25,usd,"gpt-4o-2024-08-06, input",proj_1,org_1\n' +
      '1773100800,1773187200,0.5,usd,"gpt-4o-2024-08-06, output",proj_1,org_1\n';
    const e = parseExport(csv);
    expect(e.kind).toBe("openai-costs");
    expect(e.lines).toEqual([
      { day: "2026-03-10", model: "gpt-4o-2024-08-06", cost: 0.25 },
      { day: "2026-03-10", model: "gpt-4o-2024-08-06", cost: 0.5 },
    ]);
    expect(modelKey(e.lines[0]!.model)).toBe("gpt-4o");
  });

  it("reads OpenRouter's activity export per generation", () => {
    const csv =
      "generation_id,created_at,cost_total,cost_web_search,cost_cache,tokens_prompt,tokens_completion,model_permaslug\n" +
      "gen-1,2026-03-10 09:00:01.123,0.0012,0,0,100,20,openai/gpt-4.1-2025-04-14\n";
    expect(parseExport(csv).lines).toEqual([
      {
        day: "2026-03-10",
        model: "openai/gpt-4.1-2025-04-14",
        cost: 0.0012,
        input: 100,
        output: 20,
        callId: "gen-1",
      },
    ]);
  });

  it("refuses anything else, naming the columns it expected and got", () => {
    expect(() => parseExport("a,b\n1,2\n")).toThrow(ExportFormatError);
    expect(() => parseExport("a,b\n1,2\n")).toThrow(/expected OpenAI's cost export.*got columns a, b/);
    expect(parseCsv('x,"a ""q"", b"\r\n1,2')).toEqual([
      ["x", 'a "q", b'],
      ["1", "2"],
    ]);
  });
});
