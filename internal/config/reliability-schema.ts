/**
 * Config sections of "nothing fails silently" (merged into the one schema in internal/config/schema.ts):
 * `channel_watchdog` (a channel that went dead or silent is restarted, then reported), `backup`
 * (scheduled snapshots with retention, off by default) and `reliability` (bounds under a flood).
 */
import { z } from "zod";
import { durationSchema } from "./schema-parts.js";

export const channelWatchdogSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** How often each channel is checked (and probed, where the platform allows). */
    check_s: z.number().int().min(1).max(3600).default(60),
    /** A channel not connected (error, reconnecting, starting) for this long is restarted. */
    down_s: z.number().int().min(1).default(300),
    /** No answer at all from the platform for this long (a dead long poll, no heartbeats) is dead too. */
    silence_s: z.number().int().min(1).default(900),
  })
  .strict()
  .prefault({});

export const backupSchema = z
  .object({
    /** Scheduled backups; `familiar backup` works either way. */
    enabled: z.boolean().default(false),
    every: durationSchema.default(24 * 3600_000),
    /** Snapshots kept (oldest removed first). */
    keep: z.number().int().min(1).max(1000).default(7),
    /** Where snapshots go; default `<data_dir>/backups`. */
    dir: z.string().optional(),
  })
  .strict()
  .prefault({});

export const reliabilitySchema = z
  .object({
    /**
     * Messages of one chat admitted and not yet answered; one more is refused and the sender told
     * (internal/inbound/chat-backlog.ts). Commands such as /stop are never refused.
     */
    max_backlog_per_chat: z.number().int().min(1).max(10_000).default(50),
  })
  .strict()
  .prefault({});

export type ChannelWatchdogConfig = z.infer<typeof channelWatchdogSchema>;
export type BackupConfig = z.infer<typeof backupSchema>;
