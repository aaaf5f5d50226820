/**
 * The `memory` section of config.yaml (merged into the one schema in internal/config/schema.ts).
 *
 * Embeddings are off unless `memory.embeddings` is set, so a fresh clone runs offline with keyword
 * search only. The provider must name an entry of `models.providers`; that cross-check lives in
 * {@link memoryProviderProblem} because this section cannot see the models section.
 */
import { z } from "zod";

export const memoryEmbeddingsSchema = z
  .object({
    provider: z.string({ error: "expected the name of a provider under models.providers" }).min(1),
    model: z.string({ error: "expected an embedding model id such as text-embedding-3-small" }).min(1),
    dimensions: z.number().int().min(8).max(8192).optional(),
    batch_size: z.number().int().min(1).max(2048).default(64),
  })
  .strict();

export const memorySchema = z
  .object({
    embeddings: memoryEmbeddingsSchema.optional(),
    sessions: z.boolean().default(false),
    max_result_chars: z.number().int().min(500).max(100_000).default(6000),
    recency_half_life_days: z.number().positive().max(3650).default(30),
  })
  .strict()
  .prefault({});

export type MemoryConfig = z.infer<typeof memorySchema>;
export type MemoryEmbeddingsConfig = z.infer<typeof memoryEmbeddingsSchema>;

/** The problem with `memory.embeddings.provider`, or undefined when it names a configured provider. */
export function memoryProviderProblem(
  memory: MemoryConfig,
  providers: Record<string, unknown>,
): string | undefined {
  const name = memory.embeddings?.provider;
  if (name === undefined || name in providers) return undefined;
  const known = Object.keys(providers);
  return `expected a provider configured under models.providers (${known.length ? known.join(", ") : "none configured"}), got "${name}"`;
}
