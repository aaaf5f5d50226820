/**
 * The one zod schema for `config.yaml`: the single source of truth for keys, types and defaults.
 *
 * Invariants:
 * - every object is `.strict()` so an unknown key is an error naming its path;
 * - every key has a default unless it is genuinely required, so `{}` is a valid config;
 * - error messages say what was expected; `formatIssues` adds the path and what was found.
 *
 * Over 300 lines on purpose: it is the one config object, key by key (the reusable parts are in
 * schema-parts.ts).
 */
import { z } from "zod";
import {
  absolutePath,
  agentSchema,
  cronJobSchema,
  durationSchema,
  port,
  modelRef,
  dmPolicy,
  streamSchema,
  compactSchema,
  loopDetectionSchema,
  providerSchema,
  priceSchema,
  hookSchema,
  mcpServerSchema,
  toolsPolicySchema,
} from "./schema-parts.js";
import { budgetsSchema } from "./budget-config.js";
import { sandboxResourceKeys } from "./sandbox-schema.js";
import { diskSchema } from "./disk-schema.js";
import { isTimeZone, systemTimeZone } from "./zoned-time.js";
import { memoryProviderProblem, memorySchema } from "./memory-schema.js";
import { modelProviderProblems } from "./model-provider-check.js";
import { backupSchema, channelWatchdogSchema, reliabilitySchema } from "./reliability-schema.js";
import { mediaProviderProblems, mediaSchema } from "./media-schema.js";
import { containmentSchema } from "./containment-schema.js";
import { ownerSchema, preferredChannelProblem } from "./owner-schema.js";

export { agentSchema, cronJobSchema, durationSchema, type AgentConfig } from "./schema-parts.js";

/** `channels.<telegram|discord>.media.max_image_bytes`: one image the model may see (10 MB). */
const maxImageBytes = z
  .number()
  .int()
  .positive()
  .default(10 * 1024 * 1024);

export const configSchema = z
  .object({
    data_dir: z.string().default("./data"),
    workspace: z.string().default("./workspace"),
    timezone: z
      .string()
      .default(systemTimeZone)
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
            // The name the budgets issue gives the summary model; `compact.summary_model` is the
            // older spelling of the same setting (both work; set one).
            compaction: z.object({ model: modelRef.optional() }).strict().prefault({}),
            loop_detection: loopDetectionSchema,
            subagents: z
              .object({
                model: modelRef.optional(),
                max_depth: z.number().int().min(1).max(20).default(5),
                max_concurrent: z.number().int().min(1).max(100).default(5),
                progress_updates: z.boolean().default(true),
                // The spec's AsyncAgents: delegations to these agents always run as background tasks.
                async_agents: z.array(z.string().min(1)).default([]),
                // Background tasks started by the announcement of an earlier one, in a row, per session.
                max_chain: z.number().int().min(0).max(100).default(3),
              })
              .strict()
              .prefault({}),
            context_window: z.number().int().positive().optional(),
            workspace_file_max_chars: z.number().int().positive().default(8000),
            // The most tools an agent file in <workspace>/agents/ may get (docs/security.md,
            // invariant 2); absent: the default agent's own tools.
            workspace_agent_tools: toolsPolicySchema.optional(),
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
            owner: z
              .array(
                z.union([
                  z.number().int(),
                  z
                    .string()
                    .regex(/^\d+$/, { error: "expected a numeric Telegram user id such as 123456789" }),
                ]),
              )
              .optional(),
            private_context: z.array(z.union([z.number().int(), z.string()])).default([]),
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
                max_image_bytes: maxImageBytes,
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
            owner: z.array(z.union([z.string(), z.number()])).optional(),
            private_context: z.array(z.union([z.string(), z.number()])).default([]),
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
            media: z
              .object({
                // Same key and default as Telegram's; on Discord it bounds each image and the
                // images of one message together.
                max_image_bytes: maxImageBytes,
              })
              .strict()
              .prefault({}),
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
        // Tools whose schemas are not sent until the model loads them with `load_tools` (lean prompts).
        deferred: z
          .array(z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "a tool name"))
          .default(["cron", "delegate", "dispatch", "send_message", "current_time"]),
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
                ...sandboxResourceKeys,
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
    owner: ownerSchema,
    budgets: budgetsSchema,
    memory: memorySchema,
    containment: containmentSchema,
    disk: diskSchema,
    channel_watchdog: channelWatchdogSchema,
    backup: backupSchema,
    reliability: reliabilitySchema,
    shutdown_timeout_s: z.number().positive().default(15),
  })
  .strict()
  .superRefine((c, ctx) => {
    const problem = memoryProviderProblem(c.memory, c.models.providers);
    if (problem)
      ctx.addIssue({ code: "custom", path: ["memory", "embeddings", "provider"], message: problem });
    for (const p of mediaProviderProblems(c.media, c.models.providers))
      ctx.addIssue({ code: "custom", path: p.path, message: p.message });
    for (const p of modelProviderProblems(c))
      ctx.addIssue({ code: "custom", path: p.path, message: p.message });
    // Same rule as channel-owner.ts's ownerChatTarget (which imports this file's type, so not here).
    const preferred = preferredChannelProblem(c.owner, (ch) => {
      const ch0 = c.channels[ch];
      return (ch0.owner ?? ch0.allow_from).length ? ch : undefined;
    });
    if (preferred) ctx.addIssue({ code: "custom", path: ["owner", "preferred_channel"], message: preferred });
    const d = c.agents.defaults;
    if (d.compaction.model && d.compact.summary_model && d.compaction.model !== d.compact.summary_model)
      ctx.addIssue({
        code: "custom",
        path: ["agents", "defaults", "compaction", "model"],
        message: `"${d.compaction.model}" conflicts with agents.defaults.compact.summary_model "${d.compact.summary_model}" (two names for the summary model): keep one`,
      });
  });

/** The validated, defaulted configuration object. Swapped whole on reload; never mutated. */
export type Config = z.infer<typeof configSchema>;
/** Raw input shape (before defaults). */
export type ConfigInput = z.input<typeof configSchema>;
