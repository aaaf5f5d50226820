/**
 * Every setting found in openclaw.json, named in the report with what became of it: imported (and
 * where the report says more), or left out and why. Nothing is dropped without a line: what grants
 * power in OpenClaw (exec, sandbox, MCP servers, hooks, plugins, gateway auth, `env`) is never
 * carried, and the owner reads that here rather than finding it missing later.
 *
 * Invariant: this module only reports; the settings that are imported are mapped by map-models.ts,
 * map-channels.ts and map-schedule.ts, and the ones that grant power are asked there (consent.ts).
 */
import type { ImportItem } from "./import-types.js";
import { obj, type Json } from "./openclaw-source.js";

/** Imported elsewhere: the area of the report that says how. */
const IMPORTED: Record<string, string> = {
  "agents.defaults.workspace": "the workspace files (Workspace files, Memory notes, Skills)",
  "agents.defaults.model": "Models",
  "agents.defaults.heartbeat": "Heartbeat",
  "agents.defaults.systemAgent": "picks the default agent (Agents)",
  "agents.entries": "Agents",
  "agents.list": "Agents",
  "models.providers": "Models",
  "channels.telegram": "Channels",
  "channels.discord": "Channels",
};

/** Left out on purpose, and why (the first matching prefix wins; longest first). */
const LEFT_OUT: [string, string][] = [
  ["agents.defaults.sandbox", "Familiar's sandbox is its own (tools.sandbox in config.yaml); never carried"],
  ["agents.defaults.models", "per-model aliases and parameters; set models in config.yaml models.*"],
  ["gateway.auth", "Familiar makes its own gateway token; a token from another program is never carried"],
  ["gateway", "Familiar's gateway is set in config.yaml gateway.*"],
  ["tools.exec", "running commands is Familiar's own policy (tools in config.yaml); never carried"],
  ["tools.sandbox", "Familiar's sandbox is its own (tools.sandbox in config.yaml); never carried"],
  ["tools.elevated", "elevated commands are never carried"],
  ["tools", "Familiar's tools and their policy are set in config.yaml tools.*; never carried"],
  ["mcp", "MCP servers start programs: add the ones you trust to config.yaml by hand"],
  ["hooks", "hooks run on events with their own secrets: set up Familiar's hooks by hand (docs/api.md)"],
  ["plugins", "Familiar has no plugins: nothing of theirs runs"],
  ["env", "environment variables from a config file are never carried: set them yourself"],
  ["skills", "per-skill settings and keys are never carried: the skills' files are imported (Skills)"],
  ["commands", "OpenClaw's chat commands and their owner list have no Familiar equivalent"],
  ["models.mode", "OpenClaw's provider merge mode has no Familiar equivalent"],
  ["channels", "Familiar has Telegram, Discord and its gateway only"],
  ["meta", "OpenClaw's own bookkeeping"],
  ["wizard", "OpenClaw's own bookkeeping"],
];

function outcome(path: string): { status: "note" | "skip"; detail: string } {
  const imported = IMPORTED[path];
  if (imported) return { status: "note", detail: `imported: see ${imported}` };
  const rule = LEFT_OUT.find(([p]) => path === p || path.startsWith(`${p}.`));
  return { status: "skip", detail: rule ? rule[1] : "no Familiar equivalent: left out" };
}

/** How deep a section is listed: deeper where one part is imported and its sibling is not. */
const DEPTH: Record<string, number> = { agents: 3, models: 2, channels: 2, gateway: 2, tools: 2 };

/** One report line per setting of openclaw.json (a section imported whole is one line). */
export function mapSettings(config: Json): ImportItem[] {
  const items: ImportItem[] = [];
  const visit = (v: unknown, path: string, depth: number, max: number): void => {
    const o = obj(v);
    const keys = Object.keys(o);
    if (depth >= max || keys.length === 0 || IMPORTED[path]) {
      items.push({ area: "settings", name: path, ...outcome(path) });
      return;
    }
    for (const k of keys) visit(o[k], `${path}.${k}`, depth + 1, max);
  };
  for (const [k, v] of Object.entries(config)) visit(v, k, 1, DEPTH[k] ?? 1);
  return items;
}
