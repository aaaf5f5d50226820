/**
 * Reads a provider's own usage export, to check the ledger against it (`familiar usage --reconcile`):
 *
 * - OpenAI's cost export (platform.openai.com/usage, Export, "Cost data", grouped by line item, 1 day):
 *   `start_time,end_time,amount_value,amount_currency,line_item,project_id,...`, one row per day and
 *   line item (`gpt-4o-2024-08-06, input`), times in Unix seconds, UTC;
 * - OpenAI's activity export ("Activity data"): `start_time,end_time,input_tokens,output_tokens,
 *   input_cached_tokens,num_model_requests,model,...`: counts only, so it is compared in tokens;
 * - OpenRouter's activity export (openrouter.ai/activity, CSV): one row per generation,
 *   `generation_id,created_at,cost_total,...,tokens_prompt,tokens_completion,...,model_permaslug,...`.
 *
 * The kind is told by the header. Anything else is refused with what was expected.
 */

/** One line of the provider's figures, per day (UTC) and model, or per call. */
export interface ProviderLine {
  /** `YYYY-MM-DD`, UTC (every export is in UTC). */
  day: string;
  /** The model as the provider names it. */
  model: string;
  /** USD; undefined for an export of counts only. */
  cost?: number;
  input?: number;
  output?: number;
  /** The provider's id of the call (OpenRouter's `gen-...`), when the export is per call. */
  callId?: string;
}

export type ExportKind = "openai-costs" | "openai-activity" | "openrouter-activity";

/** A parsed export. */
export interface ProviderExport {
  kind: ExportKind;
  lines: ProviderLine[];
}

/** A file that is not a known export (typed, with what was expected). */
export class ExportFormatError extends Error {
  readonly code = "EXPORT_FORMAT";
  constructor(message: string) {
    super(message);
    this.name = "ExportFormatError";
  }
}

/** Parses CSV (RFC 4180: quoted fields, doubled quotes, commas and newlines inside quotes). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(field);
      field = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(field);
      if (row.some((f) => f !== "")) rows.push(row);
      row = [];
      field = "";
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f !== "")) rows.push(row);
  return rows;
}

const num = (v: string | undefined): number | undefined => {
  if (v === undefined || v.trim() === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
};

/** `YYYY-MM-DD` of Unix seconds (or an ISO/`YYYY-MM-DD HH:MM:SS` time), UTC. */
function dayOf(v: string): string | undefined {
  const secs = /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : undefined;
  if (secs !== undefined) return new Date(secs * 1000).toISOString().slice(0, 10);
  const m = /^(\d{4}-\d{2}-\d{2})/.exec(v.trim());
  return m?.[1];
}

/** Parses an export; throws {@link ExportFormatError} naming the expected columns. */
export function parseExport(text: string): ProviderExport {
  const rows = parseCsv(text.replace(/^\uFEFF/, ""));
  const head = (rows[0] ?? []).map((h) => h.trim().toLowerCase());
  const col = (name: string): number => head.indexOf(name);
  const get = (r: string[], name: string): string | undefined => {
    const i = col(name);
    return i >= 0 ? r[i] : undefined;
  };
  const body = rows.slice(1);
  if (col("generation_id") >= 0 && col("cost_total") >= 0 && col("created_at") >= 0) {
    const modelCol = col("model_permaslug") >= 0 ? "model_permaslug" : "model";
    return {
      kind: "openrouter-activity",
      lines: body.flatMap((r) => {
        const day = dayOf(get(r, "created_at") ?? "");
        const model = get(r, modelCol);
        if (!day || !model) return [];
        const input = num(get(r, "tokens_prompt"));
        const output = num(get(r, "tokens_completion"));
        return [
          {
            day,
            model,
            cost: num(get(r, "cost_total")) ?? 0,
            ...(input !== undefined ? { input } : {}),
            ...(output !== undefined ? { output } : {}),
            callId: get(r, "generation_id") ?? "",
          },
        ];
      }),
    };
  }
  if (col("amount_value") >= 0 && col("line_item") >= 0 && col("start_time") >= 0) {
    return {
      kind: "openai-costs",
      lines: body.flatMap((r) => {
        const day = dayOf(get(r, "start_time") ?? "");
        // `gpt-4o-2024-08-06, input`: the model, then what part of it was billed.
        const model = (get(r, "line_item") ?? "").split(",")[0]?.trim();
        const cost = num(get(r, "amount_value"));
        return day && model && cost !== undefined ? [{ day, model, cost }] : [];
      }),
    };
  }
  if (col("num_model_requests") >= 0 && col("model") >= 0 && col("start_time") >= 0) {
    return {
      kind: "openai-activity",
      lines: body.flatMap((r) => {
        const day = dayOf(get(r, "start_time") ?? "");
        const model = get(r, "model")?.trim();
        const input = num(get(r, "input_tokens"));
        const output = num(get(r, "output_tokens"));
        return day && model
          ? [
              {
                day,
                model,
                ...(input !== undefined ? { input } : {}),
                ...(output !== undefined ? { output } : {}),
              },
            ]
          : [];
      }),
    };
  }
  throw new ExportFormatError(
    `not a usage export Familiar can read: expected OpenAI's cost export (columns start_time, ` +
      `amount_value, line_item), OpenAI's activity export (start_time, model, num_model_requests) or ` +
      `OpenRouter's activity export (generation_id, created_at, cost_total); got columns ` +
      `${head.slice(0, 8).join(", ") || "(none)"}`,
  );
}

/**
 * The key a model is compared by: the bare id without a vendor prefix or a date suffix, so OpenAI's
 * `gpt-4o-2024-08-06` meets a configured `gpt-4o` and OpenRouter's `openai/gpt-4.1-2025-04-14` meets
 * `openai/gpt-4.1`.
 */
export function modelKey(model: string): string {
  const slash = model.lastIndexOf("/");
  return (slash >= 0 ? model.slice(slash + 1) : model)
    .toLowerCase()
    .replace(/-\d{4}-\d{2}-\d{2}$/, "")
    .replace(/-\d{8}$/, "");
}
