/**
 * OpenClaw model providers, primary model and fallbacks -> Familiar's `models` section.
 *
 * Familiar speaks the OpenAI chat-completions API only. An OpenClaw provider with
 * `api: "openai-completions"` (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, a custom endpoint) maps
 * one to one; a built-in OpenClaw provider named in a model reference without a `models.providers`
 * entry maps when its public endpoint is OpenAI-compatible (the table below). Anything else (Anthropic
 * Messages, Google, Bedrock, OAuth logins) gets a `cannot` line naming the provider and why.
 * API keys become `${VAR}` references; the value never reaches config.yaml.
 */
import { Consent, gate, hostOf, isLocalUrl } from "./consent.js";
import { secretRef, type SecretOut } from "./secrets.js";
import { arr, obj, str, type Json } from "./openclaw-source.js";
import type { EnvVar, ImportItem, PlannedConfig } from "./import-types.js";

/** OpenClaw's built-in providers whose endpoint speaks OpenAI chat completions. */
const BUILTIN_COMPATIBLE: Record<string, { base_url: string; env?: string }> = {
  openai: { base_url: "https://api.openai.com/v1", env: "OPENAI_API_KEY" },
  openrouter: { base_url: "https://openrouter.ai/api/v1", env: "OPENROUTER_API_KEY" },
  groq: { base_url: "https://api.groq.com/openai/v1", env: "GROQ_API_KEY" },
  deepseek: { base_url: "https://api.deepseek.com/v1", env: "DEEPSEEK_API_KEY" },
  together: { base_url: "https://api.together.xyz/v1", env: "TOGETHER_API_KEY" },
  mistral: { base_url: "https://api.mistral.ai/v1", env: "MISTRAL_API_KEY" },
  xai: { base_url: "https://api.x.ai/v1", env: "XAI_API_KEY" },
  ollama: { base_url: "http://127.0.0.1:11434/v1" },
  lmstudio: { base_url: "http://127.0.0.1:1234/v1" },
};

/** The host each well-known key belongs to: sent anywhere else, it is handed to a stranger. */
const KEY_HOSTS: Record<string, string> = {
  ...Object.fromEntries(
    Object.values(BUILTIN_COMPATIBLE).flatMap((b) => (b.env ? [[b.env, hostOf(b.base_url) ?? ""]] : [])),
  ),
  ANTHROPIC_API_KEY: "api.anthropic.com",
  GEMINI_API_KEY: "generativelanguage.googleapis.com",
  GOOGLE_API_KEY: "generativelanguage.googleapis.com",
};

/**
 * Why a provider needs the owner's yes, or undefined: its `base_url` is not on this machine and it
 * sends an environment variable OpenClaw only named (`${VAR}`) to a host that variable does not
 * belong to (a foreign `base_url` with `${OPENAI_API_KEY}` would receive the owner's OpenAI key, and
 * as the primary model every conversation).
 */
function foreignKeyUse(base: string, borrowed: string[]): string | undefined {
  if (isLocalUrl(base) || borrowed.length === 0) return undefined;
  const host = hostOf(base);
  const foreign = borrowed.filter((v) => KEY_HOSTS[v] === undefined || KEY_HOSTS[v] !== host);
  if (foreign.length === 0) return undefined;
  return `sends \${${foreign.join("}, ${")}} to ${host ?? base}, which is not where ${foreign.length > 1 ? "those keys belong" : "that key belongs"}`;
}

/** OpenClaw `api` values Familiar can call. */
const COMPATIBLE_APIS = new Set(["openai-completions", "openai"]);

/** A provider id Familiar accepts in `<provider>/<model>` (no slash or space). */
const providerId = (id: string): string => id.replace(/[/\s]+/g, "-");

export interface ModelsPlan {
  planned: PlannedConfig[];
  items: ImportItem[];
  env: EnvVar[];
  /** OpenClaw model ref -> Familiar model ref, for the ones that map. */
  refMap: (ref: string) => string | undefined;
}

/** The `agents.defaults.model` value as primary + fallbacks (a string is a primary alone). */
export function modelChoice(v: unknown): { primary?: string; fallbacks: string[] } {
  if (typeof v === "string") return { primary: v, fallbacks: [] };
  const o = obj(v);
  const primary = str(o.primary);
  return {
    ...(primary ? { primary } : {}),
    fallbacks: arr(o.fallbacks).filter((x): x is string => typeof x === "string"),
  };
}

export function mapModels(config: Json, consent: Consent = new Consent()): ModelsPlan {
  const providers = obj(obj(config.models).providers);
  const planned: PlannedConfig[] = [];
  const items: ImportItem[] = [];
  const env: EnvVar[] = [];
  const ok = new Map<string, string>(); // OpenClaw provider id -> Familiar provider id
  const why = new Map<string, string>();

  for (const [id, raw] of Object.entries(providers)) {
    const p = obj(raw);
    const api = str(p.api) ?? "openai-completions";
    const base = str(p.baseUrl);
    if (!COMPATIBLE_APIS.has(api) || !base) {
      const reason = !base
        ? "no baseUrl"
        : `its API is "${api}", and Familiar calls OpenAI-compatible chat completions only`;
      why.set(id, reason);
      items.push({ area: "models", name: `provider ${id}`, status: "cannot", detail: reason });
      continue;
    }
    const fid = providerId(id);
    const out: Record<string, unknown> = { base_url: base.replace(/\/+$/, "") };
    const key = secretRef(p.apiKey, `${fid}_API_KEY`, `models.providers.${id}.apiKey`);
    const borrowed: string[] = [];
    const myEnv: EnvVar[] = [];
    if (key) {
      out.api_key = key.ref;
      if (key.env) myEnv.push(key.env);
      if (key.borrowed && key.env) borrowed.push(key.env.name);
    }
    const headers = obj(p.headers);
    const plainHeaders: Record<string, string> = {};
    for (const [h, v] of Object.entries(headers)) {
      const r: SecretOut | undefined = secretRef(v, `${fid}_${h}`, `models.providers.${id}.headers.${h}`);
      if (r) {
        plainHeaders[h] = r.ref;
        if (r.env) myEnv.push(r.env);
        if (r.borrowed && r.env) borrowed.push(r.env.name);
      }
    }
    if (Object.keys(plainHeaders).length > 0) out.headers = plainHeaders;
    const models: Record<string, Record<string, unknown>> = {};
    for (const m of arr(p.models).map(obj)) {
      const mid = str(m.id);
      if (!mid) continue;
      const facts: Record<string, unknown> = {};
      if (typeof m.contextWindow === "number" && m.contextWindow > 0) facts.context_window = m.contextWindow;
      if (typeof m.maxTokens === "number" && m.maxTokens > 0) facts.max_tokens = m.maxTokens;
      if (typeof m.reasoning === "boolean") facts.reasoning = m.reasoning;
      if (Array.isArray(m.input)) facts.vision = m.input.includes("image");
      models[mid] = facts;
    }
    if (Object.keys(models).length > 0) out.models = models;
    let p1: PlannedConfig | undefined = {
      item: { area: "models", name: `provider ${id}`, detail: `${out.base_url as string} (${api})` },
      edits: [{ kind: "set", path: ["models", "providers", fid], value: out }],
    };
    const foreign = foreignKeyUse(out.base_url as string, borrowed);
    if (foreign) p1 = gate(consent, `provider:${id}`, foreign, p1, items);
    if (!p1) {
      why.set(id, `provider ${id} needs your confirmation (--accept provider:${id})`);
      continue;
    }
    env.push(...myEnv);
    ok.set(id, fid);
    planned.push(p1);
  }

  const builtinUsed = new Set<string>();
  const refMap = (ref: string): string | undefined => {
    const slash = ref.indexOf("/");
    if (slash <= 0) return undefined;
    const prov = ref.slice(0, slash);
    const model = ref.slice(slash + 1);
    const fid = ok.get(prov);
    if (fid) return `${fid}/${model}`;
    if (!(prov in providers) && BUILTIN_COMPATIBLE[prov]) {
      builtinUsed.add(prov);
      return `${prov}/${model}`;
    }
    return undefined;
  };
  const whyNot = (ref: string): string => {
    const prov = ref.split("/")[0] ?? ref;
    return (
      why.get(prov) ??
      (ref.includes("/")
        ? `provider "${prov}" is not OpenAI-compatible or not configured`
        : "not a <provider>/<model> reference")
    );
  };

  const choice = modelChoice(obj(obj(config.agents).defaults).model);
  if (choice.primary) {
    const m = refMap(choice.primary);
    if (m)
      planned.push({
        item: { area: "models", name: "primary model", detail: m },
        edits: [{ kind: "set", path: ["models", "primary"], value: m }],
      });
    else
      items.push({
        area: "models",
        name: `primary model ${choice.primary}`,
        status: "cannot",
        detail: whyNot(choice.primary),
      });
  }
  const fallbacks: string[] = [];
  for (const f of choice.fallbacks) {
    const m = refMap(f);
    if (m) fallbacks.push(m);
    else items.push({ area: "models", name: `fallback ${f}`, status: "cannot", detail: whyNot(f) });
  }
  if (fallbacks.length > 0)
    planned.push({
      item: { area: "models", name: "fallbacks", detail: fallbacks.join(", ") },
      edits: [{ kind: "set", path: ["models", "fallbacks"], value: fallbacks }],
    });
  for (const prov of builtinUsed) {
    const b = BUILTIN_COMPATIBLE[prov];
    if (!b) continue;
    const out: Record<string, unknown> = { base_url: b.base_url };
    if (b.env) {
      out.api_key = `\${${b.env}}`;
      env.push({ name: b.env, from: `OpenClaw's ${prov} credentials (auth profile or ${b.env})` });
    }
    planned.unshift({
      item: { area: "models", name: `provider ${prov}`, detail: `${b.base_url} (OpenClaw built-in)` },
      edits: [{ kind: "set", path: ["models", "providers", prov], value: out }],
    });
  }
  return { planned, items, env, refMap };
}
