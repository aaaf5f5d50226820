/**
 * `familiar doctor` with a `${VAR}` that is unset in the calling shell and in the owner's `.env`
 * (issue 47): the doctor goes on and checks everything else, and says what it skipped. A provider
 * or channel whose key is unset is left out of the probes (its literal `${VAR}` text is never sent
 * as a key), each with a `warn` line naming the variable and the key.
 */
import type { UnresolvedEnv } from "../config/load.js";
import type { Config } from "../config/schema.js";

/** A doctor line (the shape of doctor.ts's Skipped; not imported, to keep the import one-way). */
interface Skipped {
  status: "warn";
  name: string;
  detail: string;
}

const HOW = "export it, or put it in .env beside config.yaml (mode 0600)";

function under(u: UnresolvedEnv, prefix: string): boolean {
  return u.path === prefix || u.path.startsWith(`${prefix}.`) || u.path.startsWith(`${prefix}[`);
}

/**
 * The config to probe (providers and enabled channels whose variables are unset left out) and one
 * `warn` line per thing skipped; every other unset variable is listed in one more line.
 */
export function withoutUnset(cfg: Config, unresolved: UnresolvedEnv[]): { cfg: Config; skipped: Skipped[] } {
  if (unresolved.length === 0) return { cfg, skipped: [] };
  const skipped: Skipped[] = [];
  const used = new Set<UnresolvedEnv>();
  const describe = (list: UnresolvedEnv[]): string => list.map((u) => `\${${u.name}} (${u.path})`).join(", ");
  const providers: Config["models"]["providers"] = {};
  for (const [id, p] of Object.entries(cfg.models.providers)) {
    const mine = unresolved.filter((u) => under(u, `models.providers.${id}`));
    if (mine.length === 0) {
      providers[id] = p;
      continue;
    }
    mine.forEach((u) => used.add(u));
    skipped.push({
      status: "warn",
      name: `provider ${id}`,
      detail: `skipped: ${describe(mine)} is not set here (${HOW})`,
    });
  }
  const channels = { ...cfg.channels } as Record<string, { enabled: boolean }>;
  for (const [name, ch] of Object.entries(channels)) {
    const mine = unresolved.filter((u) => under(u, `channels.${name}`));
    if (mine.length === 0) continue;
    mine.forEach((u) => used.add(u));
    if (!ch.enabled) continue;
    channels[name] = { ...ch, enabled: false };
    skipped.push({
      status: "warn",
      name: `channel ${name}`,
      detail: `skipped: ${describe(mine)} is not set here (${HOW})`,
    });
  }
  const rest = unresolved.filter((u) => !used.has(u));
  if (rest.length)
    skipped.push({
      status: "warn",
      name: "variables",
      detail: `not set here, checks that use them may fail: ${describe(rest)} (${HOW})`,
    });
  return {
    cfg: {
      ...cfg,
      models: { ...cfg.models, providers },
      channels: channels as unknown as Config["channels"],
    },
    skipped,
  };
}
