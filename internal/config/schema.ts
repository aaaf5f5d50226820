/**
 * The one zod schema for `config.yaml`: the single source of truth for keys, types and defaults.
 *
 * Invariants:
 * - every object is `.strict()` so an unknown key is an error naming its path;
 * - every key has a default unless it is genuinely required, so `{}` is a valid config;
 * - error messages say what was expected; `formatIssues` adds the path and what was found.
 */
import { z } from "zod";
import { mediaProviderProblems, mediaSchema } from "./media-schema.js";
import { parseDuration } from "./duration.js";
import { scheduleProblem } from "../cron/schedule.js";
import { budgetsSchema } from "../budgets/budget-config.js";
import { memoryProviderProblem, memorySchema } from "../memory/memory-schema.js";

/** A duration such as `30m`, `1h30m`, `45s`, `0` or a number of milliseconds. Parsed to ms. */
export const durationSchema = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: "expected a duration such as 30s, 5m, 1h30m or 0" });
    return z.NEVER;
  }
  return ms;
});

const port = z
  .number({ error: "expected an integer 1-65535" })
  .int({ error: "expected an integer 1-65535" })
  .min(1, { error: "expected an integer 1-65535" })
  .max(65535, { error: "expected an integer 1-65535" });

const modelRef = z
  .string({ error: "expected a model reference <provider>/<model>" })
  .regex(/^[^/\s]+\/\S+$/, { error: "expected a model reference <provider>/<model>" });

const dmPolicy = z.enum(["pairing", "allowlist", "open", "disabled"]);

const streamSchema = z
  .object({
    mode: z.enum(["edit", "off"]).default("edit"),
    edit_interval_ms: z.number().int().min(200).max(60_000).default(1000),
    show_tools: z.boolean().default(false),
  })
  .strict()
  .prefault({});

const compactSchema = z
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
const agentCompactSchema = z
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

const detectorSchema = z
  .object({
    enabled: z.boolean().default(true),
    warning: z.number().int().min(1).default(10),
    critical: z.number().int().min(1).default(20),
  })
  .strict()
  .prefault({});

const loopDetectionSchema = z
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
  .prefault({});

const capabilitySchema = z
  .object({
    name: z.string().min(1),
    tags: z.array(z.string()).default([]),
    strength: z.number().min(0).max(1).default(0.5),
  })
  .strict();

const toolsPolicySchema = z.union([
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
    capabilities: z.array(capabilitySchema).default([]),
    compact: agentCompactSchema.optional(),
    context_window: z.number().int().positive().optional(),
  })
  .strict();
export type AgentConfig = z.infer<typeof agentSchema>;

const providerSchema = z
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

const priceSchema = z
  .object({
    input: z.number().min(0),
    output: z.number().min(0),
    cache_read: z.number().min(0).optional(),
    cache_write: z.number().min(0).optional(),
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

const hookSchema = z
  .object({
    secret: z.string().optional(),
    hmac_secret: z.string().optional(),
    session: z.string().default("hooks"),
    agent: z.string().optional(),
    deliver: z.string().default("none"),
    template: z.string().optional(),
  })
  .strict();

/** A path granted to the sandbox: absolute, or `~/...` (the daemon user's home). */
const absolutePath = z.string().refine((p) => p.startsWith("/") || p.startsWith("~/"), {
  error: "expected an absolute path (or one starting with ~/)",
});

const mcpServerSchema = z
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
  })
  .strict()
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    error: "expected exactly one of command (stdio) or url (streamable HTTP)",
  });

export const configSchema = z
  .object({
    data_dir: z.string().default("./data"),
    workspace: z.string().default("./workspace"),
    timezone: z
      .string()
      .default(() => Intl.DateTimeFormat().resolvedOptions().timeZone)
      .refine(isTimeZone, { error: "expected an IANA time zone such as Europe/Berlin" }),
    log: z
      .object({
        level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
        pretty: z.boolean().optional(),
      })
      .strict()
      .prefault({}),
    media: mediaSchema,
    models: z
      .object({
        providers: z.record(z.string(), providerSchema).default({}),
        primary: modelRef.optional(),
        fallbacks: z.array(modelRef).default([]),
        timeout_s: z.number().positive().default(120),
        max_retries: z.number().int().min(0).max(10).default(2),
        context_window: z.number().int().positive().optional(),
        pricing: z.record(z.string(), priceSchema).default({}),
      })
      .strict()
      .prefault({}),
    agents: z
      .object({
        default: z.string().default("main"),
        max_concurrent: z.number().int().min(1).max(1000).default(4),
        defaults: z
          .object({
            compact: compactSchema.prefault({}),
            loop_detection: loopDetectionSchema,
            subagents: z
              .object({
                model: modelRef.optional(),
                max_depth: z.number().int().min(1).max(20).default(5),
                max_concurrent: z.number().int().min(1).max(100).default(5),
                progress_updates: z.boolean().default(true),
                // The spec's AsyncAgents: delegations to these agents always run as background tasks.
                async_agents: z.array(z.string().min(1)).default([]),
              })
              .strict()
              .prefault({}),
            context_window: z.number().int().positive().optional(),
            workspace_file_max_chars: z.number().int().positive().default(8000),
          })
          .strict()
          .prefault({}),
      })
      .catchall(agentSchema)
      .prefault({}),
    session: z
      .object({ idle_reset: durationSchema.default(0) })
      .strict()
      .prefault({}),
    gateway: z
      .object({
        enabled: z.boolean().default(true),
        bind: z.string().default("127.0.0.1"),
        port: port.default(18790),
        token: z.string().optional(),
        max_body_bytes: z
          .number()
          .int()
          .positive()
          .default(1024 * 1024),
        rate_limit: z
          .object({
            max_failures: z.number().int().min(1).default(10),
            window_s: z.number().int().min(1).default(60),
          })
          .strict()
          .prefault({}),
        hooks: z.record(z.string(), hookSchema).default({}),
        /** Extra web origins (`https://host[:port]`) allowed to call the gateway from a browser. */
        allowed_origins: z
          .array(
            z.string().regex(/^https?:\/\/[^/\s]+$/, {
              error: "expected an origin such as https://familiar.example.com or http://192.168.1.5:18790",
            }),
          )
          .default([]),
        /** Extra Host names the gateway answers to (DNS rebinding protection); `.example.com` admits subdomains. */
        allowed_hosts: z
          .array(
            z.string().regex(/^\.?[A-Za-z0-9.-]+$|^\[[0-9a-fA-F:.]+\]$/, {
              error: "expected a host name such as familiar.example.com (no scheme, no port)",
            }),
          )
          .default([]),
        allow_channel_writes: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    channels: z
      .object({
        telegram: z
          .object({
            enabled: z.boolean().default(false),
            token: z.string().optional(),
            api_root: z.url().optional(),
            dm_policy: dmPolicy.default("pairing"),
            allow_from: z
              .array(
                z.union([
                  z.number().int(),
                  z
                    .string()
                    .regex(/^\d+$/, { error: "expected a numeric Telegram user id such as 123456789" }),
                ]),
              )
              .default([]),
            groups: z.array(z.union([z.number().int(), z.string()])).default([]),
            require_mention: z.boolean().default(true),
            mention_patterns: z.array(z.string()).default([]),
            poll_stall_s: z.number().int().min(5).default(120),
            webhook: z
              .object({
                url: z.url(),
                secret: z.string().min(1),
                listen: z.string().default("127.0.0.1:8443"),
              })
              .strict()
              .optional(),
            stream: streamSchema,
            media: z
              .object({
                save: z.boolean().default(false),
                max_image_bytes: z
                  .number()
                  .int()
                  .positive()
                  .default(10 * 1024 * 1024),
              })
              .strict()
              .prefault({}),
          })
          .strict()
          .prefault({}),
        discord: z
          .object({
            enabled: z.boolean().default(false),
            token: z.string().optional(),
            api_base: z.url().optional(),
            dm_policy: dmPolicy.default("pairing"),
            allow_from: z.array(z.union([z.string(), z.number()])).default([]),
            guilds: z
              .record(
                z.string(),
                z
                  .object({
                    channels: z.array(z.string()).default(["*"]),
                    require_mention: z.boolean().default(true),
                  })
                  .strict(),
              )
              .default({}),
            require_mention: z.boolean().default(true),
            max_lines_per_message: z.number().int().min(1).default(17),
            stream: streamSchema,
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    routing: z
      .array(
        z
          .object({
            channel: z.string(),
            chat: z.string().optional(),
            guild: z.string().optional(),
            agent: z.string(),
          })
          .strict(),
      )
      .default([]),
    tools: z
      .object({
        max_result_chars: z.number().int().min(256).default(16_000),
        exec: z
          .object({
            security: z.enum(["deny", "allowlist", "full"]).default("allowlist"),
            ask: z.enum(["off", "on-miss", "always"]).default("on-miss"),
            // Outside the sandbox only: commands that take no path and run no program.
            allowlist: z.array(z.string()).default(["pwd", "date", "whoami", "echo *", "uname *"]),
            timeout_s: z.number().int().positive().default(60),
            max_output_chars: z.number().int().positive().default(16_000),
            approval_timeout_s: z.number().int().positive().default(300),
            sandbox: z
              .object({
                enabled: z.boolean().default(true),
                network: z.boolean().default(false),
                ro: z.array(absolutePath).default([]),
                rw: z.array(absolutePath).default([]),
                memory_mb: z.number().int().min(64).default(4096),
                max_processes: z.number().int().min(8).default(512),
                max_file_mb: z.number().int().min(1).default(1024),
              })
              .strict()
              .prefault({}),
          })
          .strict()
          .prefault({}),
        web: z
          .object({
            allow_private: z.boolean().default(false),
            allow_hosts: z.array(z.string()).default([]),
            timeout_s: z.number().positive().default(20),
            max_bytes: z
              .number()
              .int()
              .positive()
              .default(2 * 1024 * 1024),
          })
          .strict()
          .prefault({}),
        send_message: z
          .object({ allowed_targets: z.array(z.string()).default([]) })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    mcp: z
      .object({ servers: z.record(z.string(), mcpServerSchema).default({}) })
      .strict()
      .prefault({}),
    skills: z
      .object({ disabled: z.array(z.string()).default([]) })
      .strict()
      .prefault({}),
    heartbeat: z
      .object({
        every: durationSchema.prefault("30m"),
        target: z.string().default("last"),
        prompt: z.string().optional(),
        model: modelRef.optional(),
        agent: z.string().optional(),
        active_hours: z
          .object({
            start: z.string().regex(/^\d{2}:\d{2}$/, { error: "expected HH:MM" }),
            end: z.string().regex(/^\d{2}:\d{2}$/, { error: "expected HH:MM" }),
            timezone: z
              .string()
              .refine(isTimeZone, { error: "expected an IANA time zone such as Europe/Berlin" })
              .optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .prefault({}),
    cron: z
      .object({
        enabled: z.boolean().default(true),
        jobs: z
          .array(cronJobSchema)
          .default([])
          .superRefine((jobs, ctx) => {
            const seen = new Set<string>();
            jobs.forEach((j, i) => {
              if (seen.has(j.id))
                ctx.addIssue({ code: "custom", path: [i, "id"], message: "duplicate job id" });
              seen.add(j.id);
            });
          }),
      })
      .strict()
      .prefault({}),
    budgets: budgetsSchema,
    memory: memorySchema,
    shutdown_timeout_s: z.number().positive().default(15),
  })
  .strict()
  .superRefine((c, ctx) => {
    const problem = memoryProviderProblem(c.memory, c.models.providers);
    if (problem)
      ctx.addIssue({ code: "custom", path: ["memory", "embeddings", "provider"], message: problem });
    for (const p of mediaProviderProblems(c.media, c.models.providers))
      ctx.addIssue({ code: "custom", path: p.path, message: p.message });
  });

/** The validated, defaulted configuration object. Swapped whole on reload; never mutated. */
export type Config = z.infer<typeof configSchema>;
/** Raw input shape (before defaults). */
export type ConfigInput = z.input<typeof configSchema>;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
