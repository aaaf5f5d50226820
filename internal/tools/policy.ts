/**
 * Per-agent tool policy (`agents.<id>.tools`): either a list (an allow list) or `{ allow, deny }`.
 *
 * Entries are `*`, `group:<name>` (fs, exec, web, memory, messaging, cron, subagents, mcp, skills,
 * time), plain tool names, or names with `*` wildcards (`mcp__github__*`).
 * Invariant: deny always wins over allow; no policy means every registered tool.
 */
import type { ToolGroup } from "./tool.js";

/** The config shape of `agents.<id>.tools`. */
export type ToolPolicy = string[] | { allow?: string[] | undefined; deny?: string[] | undefined };

interface Named {
  name: string;
  group: ToolGroup;
}

function entryMatches(entry: string, tool: Named): boolean {
  const e = entry.trim();
  if (e === "*") return true;
  if (e.startsWith("group:")) return e.slice(6) === tool.group;
  if (!e.includes("*")) return e === tool.name;
  const re = new RegExp(
    "^" +
      e
        .split("*")
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join(".*") +
      "$",
  );
  return re.test(tool.name);
}

/** True when the policy lets an agent use the tool. */
export function isToolAllowed(policy: ToolPolicy | undefined, tool: Named): boolean {
  if (policy === undefined) return true;
  const allow = Array.isArray(policy) ? policy : (policy.allow ?? ["*"]);
  const deny = Array.isArray(policy) ? [] : (policy.deny ?? []);
  if (deny.some((e) => entryMatches(e, tool))) return false;
  return allow.some((e) => entryMatches(e, tool));
}
