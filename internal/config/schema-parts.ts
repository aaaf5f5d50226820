/**
 * The parts of the config schema (schema.ts) that are used in more than one place or are long enough
 * to read on their own: durations, model refs, agents, providers, prices, cron jobs, hooks, MCP
 * servers. Same invariants as schema.ts: `.strict()` objects, defaults everywhere, clear messages.
 *
 * Over 300 lines on purpose: the schema pieces config.yaml shares (providers, agents, cron jobs,
 * MCP servers, prices), kept together so each key is defined once.
 */
import { z } from "zod";
import { parseDuration } from "./duration.js";
import { scheduleProblem } from "./schedule.js";

/** A duration such as `30m`, `1h30m`, `45s`, `0` or a number of milliseconds. Parsed to ms. */
export const durationSchema = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: "expected a duration such as 30s, 5m, 1h30m or 0" });
    return z.NEVER;
  }
  return ms;
});

export const port = z
  .number({ error: "expected an integer 1-65535" })
  .int({ error: "expected an integer 1-65535" })
  .min(1, { error: "expected an integer 1-65535" })
  .max(65535, { error: "expected an integer 1-65535" });

export const modelRef = z
  .string({ error: "expected a model reference <provider>/<model>" })
  .regex(/^[^/\s]+\/\S+$/, { error: "expected a model reference <provider>/<model>" });

export const dmPolicy = z.enum(["pairing", "allowlist", "open", "disabled"]);

export const streamSchema = z
  .object({
    mode: z.enum(["edit", "off"]).default("edit"),
    edit_interval_ms: z.number().int().min(200).max(60_000).default(1000),
    show_tools: z.boolean().default(false),
  })
  .strict()
  .prefault({});

export const compactSchema = z
  .object({
    strategy: z.enum(["auto", "manual", "off"]).default("auto"),
    keep_last_n: z.number().int().min(0).max(200).default(10),
    observation_mask: z.boolean().default(true),
    summary_model: modelRef.optional(),
    threshold: z.number().gt(0).max(1).default(0.8),
    reserve_tokens: z.number().int().min(0).default(4096),
    memory_flush: z.boolean().default(true),
  })
  .strict();

/**
 * Per-agent overrides of `agents.defaults.compact`: the same keys without defaults, so a key the agent
 * does not set falls back to the defaults block instead of to the schema's default.
 */
export const agentCompactSchema = z
  .object({
    strategy: z.enum(["auto", "manual", "off"]).optional(),
    keep_last_n: z.number().int().min(0).max(200).optional(),
    observation_mask: z.boolean().optional(),
    summary_model: modelRef.optional(),
    threshold: z.number().gt(0).max(1).optional(),
    reserve_tokens: z.number().int().min(0).optional(),
    memory_flush: z.boolean().optional(),
  })
  .strict();

export const detectorSchema = z
  .object({
    enabled: z.boolean().default(true),
    warning: z.number().int().min(1).default(10),
    critical: z.number().int().min(1).default(20),
  })
  .strict()
  .prefault({});

/**
 * The spec's detector ids (seed agent-package-reference: `known_poll_no_progress`,
 * `global_circuit_breaker`) are accepted as aliases of `known_poll` and `circuit_breaker`. Both names
 * of one detector at once is refused by the strict object (it names the alias).
 */
const LOOP_DETECTOR_ALIASES: Record<string, string> = {
  known_poll_no_progress: "known_poll",
  global_circuit_breaker: "circuit_breaker",
};
function loopDetectorAliases(v: unknown): unknown {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
  const o = { ...(v as Record<string, unknown>) };
  for (const [alias, name] of Object.entries(LOOP_DETECTOR_ALIASES))
    if (alias in o && !(name in o)) {
      o[name] = o[alias];
      delete o[alias];
    }
  return o;
}

export const loopDetectionSchema = z.preprocess(
  loopDetectorAliases,
  z
    .object({
      enabled: z.boolean().default(true),
      history_size: z.number().int().min(2).max(1000).default(30),
      generic_repeat: detectorSchema,
      known_poll: detectorSchema,
      ping_pong: detectorSchema,
      circuit_breaker: z
        .object({ enabled: z.boolean().default(true), limit: z.number().int().min(1).default(30) })
        .strict()
        .prefault({}),
      poll_tools: z.array(z.string()).default(["web_fetch", "delegate", "process_status"]),
    })
    .strict()
    .prefault({}),
);

export const capabilitySchema = z
  .object({
    name: z.string().min(1),
    tags: z.array(z.string()).default([]),
    strength: z.number().min(0).max(1).default(0.5),
  })
  .strict();

export const toolsPolicySchema = z.union([
  z.array(z.string()),
  z.object({ allow: z.array(z.string()).optional(), deny: z.array(z.string()).default([]) }).strict(),
]);

/** One agent definition; shared by config.yaml, `<workspace>/agents/*.yaml` and the API. */
export const agentSchema = z
  .object({
    name: z.string().optional(),
    description: z.string().optional(),
    model: modelRef.optional(),
    system_prompt: z.string().optional(),
    prompt_file: z.string().optional(),
    max_tokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    tools: toolsPolicySchema.optional(),
    max_iterations: z.number().int().min(1).max(1000).default(50),
    light_context: z.boolean().default(false),
    engine: z.enum(["model", "cli", "claude-cli"]).default("model"),
    command: z.string().optional(),
    args: z.array(z.string()).default([]),
    extra_args: z.array(z.string()).default([]),
    mcp_config: z.string().min(1).optional(),
    timeout_s: z.number().int().positive().optional(),
    idle_ttl: durationSchema.optional(),
    // CLI engines: `false` runs the CLI outside the sandbox (honoured from config.yaml only), and
    // `pass_env` names environment variables it gets beyond its minimal set (engine-launch.ts).
    sandbox: z.boolean().optional(),
    pass_env: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "expected a variable name" }))
      .default([]),
    capabilities: z.array(capabilitySchema).default([]),
    compact: agentCompactSchema.optional(),
    context_window: z.number().int().positive().optional(),
    // false: kept in the config but not run (the echo agent says so; delegation refuses it).
    enabled: z.boolean().default(true),
    // The memory this agent's memory tools reach: files (MEMORY.md, memory/), sessions (past chats).
    // Absent: both; []: none (memory_search and memory_write refuse).
    memory: z.array(z.enum(["files", "sessions"])).optional(),
  })
  .strict();
export type AgentConfig = z.infer<typeof agentSchema>;

export const providerSchema = z
  .object({
    base_url: z.url({ error: "expected a URL such as https://api.openai.com/v1" }),
    api_key: z.string().optional(),
    headers: z.record(z.string(), z.string()).default({}),
    timeout_s: z.number().positive().optional(),
    models: z
      .record(
        z.string(),
        z
          .object({
            context_window: z.number().int().positive().optional(),
            max_tokens: z.number().int().positive().optional(),
            vision: z.boolean().optional(),
            reasoning: z.boolean().optional(),
          })
          .strict(),
      )
      .default({}),
  })
  .strict();

/**
 * A model's price (`models.pricing`), USD. Tokens are per 1M; `long_context` prices a whole call whose
 * prompt is over `above` tokens (Gemini 2.5 Pro, Claude's 1M window); `per_minute` prices audio
 * transcription, `per_million_chars` speech. Reasoning tokens are billed as output (they are part of
 * `output`). See docs/costs.md.
 */
export const priceSchema = z
  .object({
    input: z.number().min(0).default(0),
    output: z.number().min(0).default(0),
    cache_read: z.number().min(0).optional(),
    cache_write: z.number().min(0).optional(),
    long_context: z
      .object({
        above: z.number().int().positive(),
        input: z.number().min(0),
        output: z.number().min(0),
        cache_read: z.number().min(0).optional(),
        cache_write: z.number().min(0).optional(),
      })
      .strict()
      .optional(),
    per_minute: z.number().min(0).optional(),
    per_million_chars: z.number().min(0).optional(),
  })
  .strict();

/** One cron job (config `cron.jobs[]`, and runtime jobs created by the tool, gateway or CLI). */
export const cronJobSchema = z
  .object({
    id: z.string().regex(/^[a-zA-Z0-9_-]+$/, { error: "expected an id of letters, digits, _ or -" }),
    cron: z.string().optional(),
    every: durationSchema.optional(),
    at: z.string().optional(),
    timezone: z.string().optional(),
    message: z.string().min(1),
    agent: z.string().optional(),
    /** A (cheaper) model for this job; the agent's model when absent. */
    model: modelRef.optional(),
    session: z.enum(["isolated", "main"]).default("isolated"),
    deliver: z.string().default("none"),
    enabled: z.boolean().default(true),
    light_context: z.boolean().default(true),
    catch_up: z.boolean().default(false),
    /**
     * What happens to a run missed while the daemon was down or the clock jumped: `run_once_late`
     * (one late run, its message says how late), `skip_and_tell` (skipped, the owner is told) or
     * `skip` (skipped and recorded). Default: `run_once_late` for an `at` reminder or with
     * `catch_up: true`, `skip` otherwise.
     */
    missed: z.enum(["run_once_late", "skip_and_tell", "skip"]).optional(),
  })
  .strict()
  .refine((j) => [j.cron, j.every, j.at].filter((v) => v !== undefined).length === 1, {
    error: "expected exactly one of cron, every or at",
  })
  .superRefine((j, ctx) => {
    // The expression, duration, ISO time and time zone themselves (croner is loaded lazily, only here).
    if ([j.cron, j.every, j.at].filter((v) => v !== undefined).length !== 1) return;
    const p = scheduleProblem(j);
    if (p)
      ctx.addIssue({ code: "custom", path: p.field === "schedule" ? [] : [p.field], message: p.message });
  });

export const hookSchema = z
  .object({
    secret: z.string().optional(),
    hmac_secret: z.string().optional(),
    session: z.string().default("hooks"),
    agent: z.string().optional(),
    deliver: z.string().default("none"),
    template: z.string().optional(),
    /**
     * How long an accepted delivery is remembered: the same delivery id, or the same signed body, is
     * not run again inside it (replay protection).
     */
    replay_window: durationSchema.default(7 * 24 * 60 * 60_000),
  })
  .strict();

/** A path granted to the sandbox: absolute, or `~/...` (the daemon user's home). */
export const absolutePath = z.string().refine((p) => p.startsWith("/") || p.startsWith("~/"), {
  error: "expected an absolute path (or one starting with ~/)",
});

export const mcpServerSchema = z
  .object({
    command: z.string().optional(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    url: z.url().optional(),
    headers: z.record(z.string(), z.string()).default({}),
    enabled: z.boolean().default(true),
    /** Run a stdio server under bubblewrap (workspace read-write, network on unless turned off). */
    sandbox: z.boolean().default(false),
    sandbox_network: z.boolean().default(true),
    /** Trusted: its results do not taint a session, and its tools are not sinks (containment). */
    trusted: z.boolean().default(false),
    /**
     * The folders the client declares as MCP roots (`workspace` names the workspace). Absent: no
     * roots capability at all, so a server keeps the folders its own arguments name.
     */
    roots: z
      .array(
        z.string().refine((p) => p === "workspace" || p.startsWith("/") || p.startsWith("~/"), {
          error: 'expected "workspace" or an absolute path (or one starting with ~/)',
        }),
      )
      .optional(),
  })
  .strict()
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    error: "expected exactly one of command (stdio) or url (streamable HTTP)",
  });
