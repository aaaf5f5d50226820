/**
 * Slash command definitions for Discord, built from the shared chat command list so Discord and
 * Telegram always offer the same set. A command with arguments gets one string option; the
 * interaction is turned back into the text command `/<name> <value>`.
 */
import { CHAT_COMMANDS, type CommandSpec } from "../../inbound/commands.js";

/** Option names per command (Discord: 1-32 lower-case characters). */
const OPTION_NAMES: Record<string, string> = {
  model: "model",
  compact: "instructions",
  approve: "id",
  deny: "id",
  agent: "agent",
};

/** The option name of a command with arguments. */
export function optionName(spec: CommandSpec): string | undefined {
  if (!spec.args) return undefined;
  return OPTION_NAMES[spec.name] ?? "args";
}

/** Bodies for `PUT /applications/<id>/commands` (chat input commands, usable in guilds and DMs). */
export function slashCommandBodies(specs: readonly CommandSpec[] = CHAT_COMMANDS): Record<string, unknown>[] {
  return specs.map((s) => {
    const opt = optionName(s);
    return {
      name: s.name,
      type: 1,
      description: s.description.slice(0, 100),
      contexts: [0, 1],
      integration_types: [0],
      ...(opt
        ? {
            options: [
              {
                type: 3,
                name: opt,
                description: (s.args ?? opt).slice(0, 100),
                required: (s.args ?? "").startsWith("<"),
              },
            ],
          }
        : {}),
    };
  });
}

/** The text command for an interaction: `/name value`. */
export function commandText(
  name: string,
  options: readonly { name: string; value?: unknown }[] = [],
): string {
  const args = options
    .map((o) => (o.value === undefined || o.value === null ? "" : String(o.value)))
    .filter((v) => v !== "")
    .join(" ");
  return args ? `/${name} ${args}` : `/${name}`;
}
