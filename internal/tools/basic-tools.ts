/**
 * Small built-ins: `current_time` (in the owner's time zone) and `send_message` (proactive message to
 * an allowed channel target through the channel registry).
 */
import { z } from "zod";
import { pad2, zonedParts } from "../config/zoned-time.js";
import type { Config } from "../config/schema.js";
import type { Clock } from "../core/clock.js";
import type { Outbox } from "../core/outbox.js";
import { defineTool, ToolError, type Tool } from "./tool.js";

const timeSchema = z
  .object({
    timezone: z.string().optional().describe("IANA time zone (default: the owner's)"),
  })
  .strict();

const sendSchema = z
  .object({
    target: z
      .string()
      .min(1)
      .describe("channel target such as telegram:123456 (must be allowed by the owner)"),
    text: z.string().min(1).max(20_000).describe("message text (markdown)"),
  })
  .strict();

/** What send_message needs from the Outbox. */
export type MessageDelivery = Pick<Outbox, "deliver">;

/** True when `target` is allowed: exact entry, `<channel>:*`, or `*`. */
export function targetAllowed(target: string, allowed: readonly string[]): boolean {
  return allowed.some(
    (a) => a === "*" || a === target || (a.endsWith(":*") && target.startsWith(a.slice(0, -1))),
  );
}

/** Formats an instant for the model: ISO with offset, weekday, zone. */
export function describeTime(ms: number, timeZone: string): string {
  const d = new Date(ms);
  const fmt = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "long",
    year: "numeric",
    month: "long",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "longOffset",
  });
  const parts = Object.fromEntries(fmt.formatToParts(d).map((p) => [p.type, p.value])) as Record<
    string,
    string
  >;
  const z = zonedParts(ms, timeZone);
  const offset = (parts.timeZoneName ?? "GMT").replace("GMT", "") || "+00:00";
  const iso = `${z.y}-${pad2(z.m)}-${pad2(z.d)}T${pad2(z.h)}:${pad2(z.min)}:${pad2(z.s)}${offset}`;
  return `${parts.weekday}, ${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute} (${timeZone}, UTC${offset})\nISO: ${iso}\nUnix: ${Math.floor(ms / 1000)}`;
}

export function createTimeTool(deps: { config: () => Config; clock: Clock }): Tool<typeof timeSchema> {
  return defineTool({
    name: "current_time",
    hint: "time in another zone",
    group: "time",
    description: "The current date and time in the owner's time zone (or another IANA zone).",
    schema: timeSchema,
    async execute(args) {
      const tz = args.timezone ?? deps.config().timezone;
      try {
        new Intl.DateTimeFormat("en-US", { timeZone: tz });
      } catch {
        throw new ToolError(
          "TIME_BAD_ZONE",
          `unknown time zone "${tz}"; use an IANA name such as Europe/Berlin`,
        );
      }
      return describeTime(deps.clock.now(), tz);
    },
  });
}

export function createSendMessageTool(deps: {
  config: () => Config;
  channels: MessageDelivery;
}): Tool<typeof sendSchema> {
  return defineTool({
    name: "send_message",
    hint: "message another chat",
    group: "messaging",
    description:
      "Send a message to one of the owner's allowed channel targets (for proactive messages; your normal reply already reaches the current chat).",
    schema: sendSchema,
    async execute(args) {
      const allowed = deps.config().tools.send_message.allowed_targets;
      if (!targetAllowed(args.target, allowed))
        throw new ToolError(
          "SEND_NOT_ALLOWED",
          allowed.length
            ? `target "${args.target}" is not allowed; allowed: ${allowed.join(", ")}`
            : "no targets are allowed (tools.send_message.allowed_targets is empty)",
        );
      try {
        await deps.channels.deliver(args.target, args.text);
      } catch (err) {
        throw new ToolError("SEND_FAILED", `could not deliver to ${args.target}: ${(err as Error).message}`);
      }
      return `sent to ${args.target}`;
    },
  });
}
