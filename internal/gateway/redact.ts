/**
 * Secret redaction for `config.get`: any key that names a secret, and any header whose name does,
 * is replaced by "[REDACTED]" (presence stays visible, the value does not).
 */
const SECRET_KEY = /(^|_)(token|secret|api_key|apikey|password|hmac_secret)$|authorization|cookie/i;

export function redactConfig(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => redactConfig(v));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    const isHeaders = key === "headers" || key === "env";
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v === "string" && (SECRET_KEY.test(k) || (isHeaders && /auth|key|token|secret/i.test(k))))
        out[k] = "[REDACTED]";
      else out[k] = redactConfig(v, k);
    }
    return out;
  }
  return value;
}
