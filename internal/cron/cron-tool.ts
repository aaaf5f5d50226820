/**
 * The agent's `cron` tool: list, add, remove and run scheduled jobs. Jobs it adds are runtime jobs
 * (persisted; they survive a restart). By default a job created from a chat delivers its result back
 * to that chat (`deliver: origin`, the chat stored with the job: a channel chat, the web chat or
 * `familiar chat`) and runs in its own isolated session.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../tools/tool.js";
import { targetAllowed } from "../tools/basic-tools.js";
import { CronError } from "./job.js";
import type { CronJobView, CronService } from "./cron-service.js";

const schema = z
  .object({
    action: z.enum(["list", "add", "remove", "run"]).describe("what to do"),
    id: z
      .string()
      .regex(/^[a-zA-Z0-9_-]+$/)
      .max(64)
      .optional()
      .describe("job id (remove, run; optional for add: generated when absent)"),
    message: z.string().optional().describe("add: the instruction the agent receives when the job runs"),
    cron: z
      .string()
      .optional()
      .describe('add: cron expression "min hour day month weekday" (6 fields = seconds first)'),
    every: z.string().optional().describe("add: repeat interval such as 30m, 2h, 1d"),
    at: z
      .string()
      .optional()
      .describe(
        'add: one-shot time: ISO, e.g. 2026-03-29T09:00 (owner\'s time zone unless an offset is given), or from now, e.g. "in 2 minutes", "2m", "+1h30m"',
      ),
    timezone: z.string().optional().describe("add: IANA time zone for cron/at (default: the owner's)"),
    deliver: z
      .string()
      .optional()
      .describe(
        'add: where the result goes: "origin" (this chat, the default), a channel target, "last", or "none"',
      ),
    session: z
      .enum(["isolated", "main"])
      .optional()
      .describe("add: isolated (own session, default) or main (the owner's main conversation)"),
    missed: z
      .enum(["run_once_late", "skip_and_tell", "skip"])
      .optional()
      .describe(
        "add: a run missed while the assistant was off: run_once_late (default for at), skip_and_tell, skip (default otherwise)",
      ),
  })
  .strict();

function line(j: CronJobView): string {
  const next = j.nextRunAt ? new Date(j.nextRunAt).toISOString() : j.completed ? "done" : "-";
  const last = j.lastStatus ? ` last=${j.lastStatus}${j.lastError ? ` (${j.lastError})` : ""}` : "";
  return `${j.id} [${j.source}${j.enabled ? "" : ", disabled"}] ${j.schedule} next=${next}${last} deliver=${j.deliver}: ${j.message.slice(0, 80)}`;
}

export interface CronToolOptions {
  /**
   * Targets the agent may send to on its own (`tools.send_message.allowed_targets`). A job may deliver
   * to `none`, `last`, the chat it was created from, or one of these: the cron tool must not become a
   * way around send_message's allow-list (a prompt-injected "remind telegram:<stranger> of ...").
   */
  allowedTargets?: () => readonly string[];
}

/** True when a job created from a chat with `replyTarget` may deliver to `deliver`. */
export function deliverAllowed(
  deliver: string,
  replyTarget: string | undefined,
  allowed: readonly string[],
): boolean {
  return (
    deliver === "none" ||
    deliver === "last" ||
    deliver === "origin" ||
    deliver === replyTarget ||
    targetAllowed(deliver, allowed)
  );
}

/** Builds the tool over a running cron service. */
export function createCronTool(service: CronService, opts: CronToolOptions = {}): Tool<typeof schema> {
  return defineTool({
    name: "cron",
    hint: "reminders, schedules",
    group: "cron",
    description:
      "Manage scheduled jobs (reminders, routines). action=list shows jobs; action=add creates one with message and exactly one of cron, every or at; action=remove deletes a job by id; action=run runs a job now.",
    schema,
    async execute(args, _signal, ctx) {
      try {
        switch (args.action) {
          case "list": {
            const jobs = service.list();
            return jobs.length ? jobs.map(line).join("\n") : "no cron jobs";
          }
          case "add": {
            if (!args.message) throw new ToolError("invalid_args", "add needs a message");
            const id = args.id ?? `job-${randomBytes(3).toString("hex")}`;
            // A channel chat keeps its target (as before origins); a gateway chat (the web chat,
            // `familiar chat`) has none: `origin` finds its session through the stored origin.
            const deliver = args.deliver ?? ctx.replyTarget ?? "origin";
            const allowed = opts.allowedTargets?.() ?? [];
            if (!deliverAllowed(deliver, ctx.replyTarget, allowed))
              throw new ToolError(
                "CRON_TARGET_NOT_ALLOWED",
                `deliver "${deliver}" is not allowed: use this chat${ctx.replyTarget ? ` (${ctx.replyTarget})` : ""}, "last", "none"${allowed.length ? ` or one of ${allowed.join(", ")}` : " (tools.send_message.allowed_targets is empty)"}`,
              );
            const input: Record<string, unknown> = {
              id,
              message: args.message,
              session: args.session ?? "isolated",
              deliver,
              agent: ctx.agentId,
              // A reminder set while the daemon happens to be down should still reach the owner.
              catch_up: args.at !== undefined,
            };
            for (const k of ["cron", "every", "at", "timezone", "missed"] as const)
              if (args[k] !== undefined) input[k] = args[k];
            // From the turn's own context, never from the model's arguments.
            const job = service.add(input, {
              kind: "chat",
              sessionKey: ctx.sessionKey,
              ...(ctx.replyTarget ? { replyTarget: ctx.replyTarget } : {}),
            });
            return { content: `added ${line(job)}`, writes: { jobs: [job.id] } };
          }
          case "remove": {
            if (!args.id) throw new ToolError("invalid_args", "remove needs an id");
            service.remove(args.id);
            return `removed ${args.id}`;
          }
          case "run": {
            if (!args.id) throw new ToolError("invalid_args", "run needs an id");
            const job = service.get(args.id);
            if (!job) throw new ToolError("CRON_NOT_FOUND", `no cron job "${args.id}"`);
            const pending = service.runNow(args.id);
            // A main-session run queues behind this very turn: waiting for it would deadlock.
            if (job.session === "main") {
              pending.catch(() => undefined);
              return `started ${args.id}; its result goes to ${job.deliver}`;
            }
            const r = await pending;
            return `run ${r.status}${r.error ? `: ${r.error}` : ""}${r.outputPreview ? `\n${r.outputPreview}` : ""}`;
          }
        }
      } catch (err) {
        if (err instanceof CronError) throw new ToolError(err.code, err.message);
        throw err;
      }
    },
  });
}
