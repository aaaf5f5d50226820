import type { Config } from "../config/schema.js";

/** Every secret value in a config, for the log scrubber. */
export function collectSecrets(cfg: Config): string[] {
  const out: (string | undefined)[] = [
    cfg.gateway.token,
    cfg.channels.telegram.token,
    cfg.channels.discord.token,
    cfg.channels.telegram.webhook?.secret,
  ];
  for (const p of Object.values(cfg.models.providers)) {
    out.push(p.api_key);
    for (const [k, v] of Object.entries(p.headers))
      if (/auth|key|token|secret/i.test(k)) out.push(v.replace(/^Bearer\s+/i, ""));
  }
  for (const h of Object.values(cfg.gateway.hooks)) out.push(h.secret, h.hmac_secret);
  for (const s of Object.values(cfg.mcp.servers)) {
    for (const [k, v] of Object.entries({ ...s.env, ...s.headers }))
      if (/auth|key|token|secret/i.test(k)) out.push(v.replace(/^Bearer\s+/i, ""));
  }
  return out.filter((v): v is string => typeof v === "string" && v.length > 0);
}
