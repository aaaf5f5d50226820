/**
 * Context windows (tokens) of common models, used when the config does not state one.
 * Matched by longest prefix on the bare model id (lower-cased, vendor prefix and `:tag` removed),
 * so `gpt-4o-2024-08-06`, `openai/gpt-4o` and `qwen2.5:14b` all resolve.
 * Values are the providers' documented input windows; when in doubt the smaller figure is used,
 * because overestimating the window makes compaction start too late.
 */
const TABLE: readonly (readonly [prefix: string, tokens: number])[] = [
  // OpenAI
  ["gpt-5", 400_000],
  ["gpt-4.1", 1_047_576],
  ["gpt-4o", 128_000],
  ["gpt-4-turbo", 128_000],
  ["gpt-4-32k", 32_768],
  ["gpt-4", 8_192],
  ["gpt-3.5-turbo", 16_385],
  ["o1-mini", 128_000],
  ["o1", 200_000],
  ["o3", 200_000],
  ["o4-mini", 200_000],
  ["gpt-oss", 131_072],
  // Anthropic
  ["claude-3", 200_000],
  ["claude-opus-4", 200_000],
  ["claude-sonnet-4", 200_000],
  ["claude-haiku-4", 200_000],
  ["claude-4", 200_000],
  ["claude", 200_000],
  // Google
  ["gemini-2.5", 1_048_576],
  ["gemini-2.0", 1_048_576],
  ["gemini-1.5-pro", 2_097_152],
  ["gemini-1.5", 1_048_576],
  ["gemini", 1_048_576],
  ["gemma3", 131_072],
  ["gemma-3", 131_072],
  // DeepSeek
  ["deepseek-chat", 128_000],
  ["deepseek-reasoner", 128_000],
  ["deepseek-v3", 128_000],
  ["deepseek-r1", 128_000],
  ["deepseek-coder", 128_000],
  // Meta Llama
  ["llama-4", 1_048_576],
  ["llama4", 1_048_576],
  ["llama-3.3", 131_072],
  ["llama3.3", 131_072],
  ["llama-3.2", 131_072],
  ["llama3.2", 131_072],
  ["llama-3.1", 131_072],
  ["llama3.1", 131_072],
  ["llama-3", 8_192],
  ["llama3", 8_192],
  // Qwen
  ["qwen3", 131_072],
  ["qwen2.5", 131_072],
  ["qwen-max", 32_768],
  ["qwen-plus", 131_072],
  ["qwen-turbo", 1_000_000],
  ["qwq", 131_072],
  // Mistral
  ["mistral-large", 131_072],
  ["mistral-small", 131_072],
  ["mistral-nemo", 131_072],
  ["codestral", 262_144],
  // xAI
  ["grok-4", 256_000],
  ["grok-3", 131_072],
];

// Longest prefix first so `gpt-4o` wins over `gpt-4` and `o1-mini` over `o1`.
const SORTED = [...TABLE].sort((a, b) => b[0].length - a[0].length);

/** Strips a vendor prefix (`openai/`, `meta-llama/`) and an Ollama tag (`:14b`). */
export function bareModelId(model: string): string {
  const slash = model.lastIndexOf("/");
  const noVendor = slash >= 0 ? model.slice(slash + 1) : model;
  const colon = noVendor.indexOf(":");
  return (colon >= 0 ? noVendor.slice(0, colon) : noVendor).toLowerCase();
}

/** The known context window of a model id, or undefined. */
export function knownContextWindow(model: string): number | undefined {
  const id = bareModelId(model);
  for (const [prefix, tokens] of SORTED) if (id.startsWith(prefix)) return tokens;
  return undefined;
}
