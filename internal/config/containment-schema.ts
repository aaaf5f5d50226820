/**
 * The `containment` section of config.yaml (merged into the one schema in internal/config/schema.ts):
 * prompt-injection containment. A session that has read untrusted text asks the owner before any
 * sink (docs/security.md, "Prompt-injection containment"); egress from `web_fetch` and from the
 * sandbox's network goes through one policy with a domain allowlist.
 */
import { z } from "zod";

const domainPattern = z
  .string()
  .min(1)
  .refine((d) => d === "*" || /^(\*\.)?[a-z0-9.-]+$/i.test(d), {
    error: 'expected a host name, "*.example.com" or "*"',
  });

export const containmentSchema = z
  .object({
    /** Off: taint is neither tracked nor enforced (not recommended). */
    enabled: z.boolean().default(true),
    /** Seconds the owner has to answer a containment question before it counts as "no". */
    approval_timeout_s: z.number().int().positive().default(300),
    /** How long "yes for this host" lasts. */
    host_grant_minutes: z.number().int().positive().max(10_080).default(60),
    egress: z
      .object({
        /**
         * Hosts `web_fetch` and sandboxed commands may reach while the session is untainted
         * (`*` = any; `*.example.com` = the domain and its subdomains). Unknown hosts are refused;
         * in a tainted session every host not granted asks the owner.
         */
        allow_domains: z.array(domainPattern).default(["*"]),
        /**
         * With `tools.exec.sandbox.network: true`, sandboxed commands reach the network only
         * through the daemon's CONNECT proxy (a private network namespace plus a socket).
         */
        proxy: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

export type ContainmentConfig = z.infer<typeof containmentSchema>;
