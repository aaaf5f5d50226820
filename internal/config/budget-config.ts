/**
 * The `budgets` block of config.yaml: spending limits in USD (and optionally tokens) per calendar day
 * and month, overall and per agent, per channel and per session, plus the warning threshold, where
 * warnings go and the price of a model nobody priced. Imported by internal/config/schema.ts.
 */
import { z } from "zod";

const usd = z.number({ error: "expected an amount in USD such as 5 or 0.5" }).positive({
  error: "expected an amount in USD greater than 0",
});
const tokens = z
  .number({ error: "expected a whole number of tokens" })
  .int({ error: "expected a whole number of tokens" })
  .positive({ error: "expected a whole number of tokens greater than 0" });

/** One set of limits; every key is optional (no key = no limit of that kind). */
export const limitsSchema = z
  .object({
    daily_usd: usd.optional(),
    monthly_usd: usd.optional(),
    daily_tokens: tokens.optional(),
    monthly_tokens: tokens.optional(),
  })
  .strict();

/** Limits as configured. */
export type Limits = z.infer<typeof limitsSchema>;

/** The `budgets` block. */
export const budgetsSchema = z
  .object({
    /** Limits on everything the daemon spends. */
    overall: limitsSchema.prefault({}),
    /** Limits per agent id (the agent of the turn that started the call tree). */
    agents: z.record(z.string(), limitsSchema).default({}),
    /** Limits per channel (telegram, discord, gateway, api, cron, heartbeat, ...). */
    channels: z.record(z.string(), limitsSchema).default({}),
    /** Limits applied to each session key on its own (a runaway conversation stops alone). */
    per_session: limitsSchema.prefault({}),
    /** Fraction of a limit at which the owner is warned, once per limit and period. */
    warn_at: z
      .number({ error: "expected a fraction between 0 and 1 such as 0.8" })
      .gt(0, { error: "expected a fraction between 0 and 1 such as 0.8" })
      .max(1, { error: "expected a fraction between 0 and 1 such as 0.8" })
      .default(0.8),
    /** Where warnings go: a channel target such as `telegram:123456`, or `none` (log only). */
    warn_target: z.string().min(1).default("none"),
    /**
     * USD per 1M tokens for a model with no entry in `models.pricing`: such calls count at this price
     * instead of as free. Set both to 0 for local models.
     */
    default_price: z
      .object({ input: z.number().min(0).default(5), output: z.number().min(0).default(15) })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

/** The validated `budgets` block. */
export type BudgetsConfig = z.infer<typeof budgetsSchema>;
