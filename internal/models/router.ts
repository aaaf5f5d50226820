/**
 * The model router: the one {@link ModelClient} the agent uses.
 *
 * For each call it builds the chain `[requested or models.primary, ...models.fallbacks]` (deduplicated)
 * from the CURRENT config (read on every call, so hot reloads apply at once) and walks it:
 * - transient errors (5xx, timeout, unreachable, bad stream) are retried on the same model with
 *   exponential backoff up to `models.max_retries`, then the model goes into cooldown and the next
 *   one is tried; a 429 puts the model into cooldown (honouring `retry-after`) and moves on at once
 *   (it is retried only when it is the last option);
 * - a model in cooldown is skipped unless it is the last option;
 * - auth and bad-request errors fail fast (no retry, no fallback) with a message naming provider and
 *   model; context overflow is thrown as-is for compaction to handle;
 * - a model whose context window is below 16K (context-window.ts) is refused without a call, with a
 *   clear MODEL_NOT_CONFIGURED error; the next model in the chain may answer;
 * - once any text, thinking or tool call reached the caller, an error is thrown instead of falling
 *   back, so the user is never answered twice.
 * The `done` event names the provider and model that actually answered.
 *
 * With no provider configured at all, the offline echo model answers and a prominent warning is logged.
 *
 * Over 300 lines on purpose: fallback, cooldowns and retries interlock on every call; the choice of
 * model is in model-choice.ts.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log/logger.js";
import { sleep, systemClock, type Clock } from "../core/clock.js";
import { ModelError, type ModelClient, type ModelRequest, type ModelStreamEvent } from "./types.js";
import { classifyModelError } from "./classify-error.js";
import { resolveContextWindow, validateContextWindow } from "./context-window.js";
import { createOpenAIProvider, type Provider } from "./openai-provider.js";
import { createEchoProvider, ECHO_MODEL_REF, ECHO_PROVIDER } from "./echo-model.js";

type ProviderConfig = Config["models"]["providers"][string];

/** A model currently in cooldown. */
export interface CooldownInfo {
  /** `<provider>/<model>` */
  model: string;
  /** Epoch ms when the model may be tried again. */
  until: number;
  remainingMs: number;
  /** Consecutive failures that led here. */
  failures: number;
  reason: string;
}

export interface ModelRouterOptions {
  /** Current config; called on every request. */
  config: () => Config;
  logger: Logger;
  /** Clock for backoff sleeps and cooldowns. Default: the system clock. */
  clock?: Clock;
  /** Builds a provider client (default: openai SDK provider). Called again when a provider's config changes. */
  createProvider?: (name: string, cfg: ProviderConfig, timeoutMs: number) => Provider;
  /** Backoff between retries: `baseMs * 2^attempt`, capped at `maxMs`. Default 500 ms / 8 s. */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Cooldown after a model failed: `baseMs * 2^(failures-1)`, capped at `maxMs`. Default 15 s / 10 min. */
  cooldown?: { baseMs?: number; maxMs?: number };
}

/** The router: a ModelClient plus status and resolution helpers. */
export interface ModelRouter extends ModelClient {
  /** Models currently cooling down (expired entries are dropped). */
  cooldowns(): CooldownInfo[];
  /** Ends the cooldown of one model, or of all. */
  clearCooldown(model?: string): void;
  /** The ordered candidate chain for a request, as `<provider>/<model>` refs. */
  chain(requested?: string): string[];
  /** True when the current config has no provider and the echo model stands in. */
  usingEcho(): boolean;
  /** Status for `familiar status` / the gateway: state, chain and cooldowns. */
  status(): RouterStatus;
  /**
   * Where the router finds an agent's own `context_window` (workspace and API agents are not in
   * config.yaml); without it only config.yaml agents' windows count. Set by the agent host.
   */
  useAgentWindows(lookup: (agentId: string) => number | undefined): void;
}

/** What {@link ModelRouter.status} reports. */
export interface RouterStatus {
  /** `degraded` while any model cools down or only echo is available; `error` when misconfigured. */
  state: "ok" | "degraded" | "error";
  detail?: string;
  chain: string[];
  usingEcho: boolean;
  cooldowns: CooldownInfo[];
}

interface CooldownState {
  until: number;
  failures: number;
  reason: string;
}

/** Splits `<provider>/<model>`; the model part may itself contain slashes (OpenRouter ids). */
export function parseModelRef(ref: string): { provider: string; model: string } {
  const i = ref.indexOf("/");
  if (i <= 0 || i === ref.length - 1)
    throw new ModelError(
      "MODEL_NOT_CONFIGURED",
      `"${ref}" is not a model reference; expected <provider>/<model>`,
    );
  return { provider: ref.slice(0, i), model: ref.slice(i + 1) };
}

/** The first words of a reply the echo model gives in place of `wanted` (no provider configured). */
export function echoStandInNotice(wanted: string): string {
  return (
    `[${wanted} is not available: no model provider is configured, so the offline echo model answers. ` +
    "Add a provider under models.providers in config.yaml.]\n\n"
  );
}

/** Creates the router. */
export function createModelRouter(opts: ModelRouterOptions): ModelRouter {
  const clock = opts.clock ?? systemClock;
  const log = opts.logger.child({ module: "models" });
  const backoffBase = opts.backoff?.baseMs ?? 500;
  const backoffMax = opts.backoff?.maxMs ?? 8000;
  const coolBase = opts.cooldown?.baseMs ?? 15_000;
  const coolMax = opts.cooldown?.maxMs ?? 600_000;
  const makeProvider =
    opts.createProvider ??
    ((name: string, cfg: ProviderConfig, timeoutMs: number): Provider =>
      createOpenAIProvider({
        name,
        baseUrl: cfg.base_url,
        ...(cfg.api_key !== undefined ? { apiKey: cfg.api_key } : {}),
        headers: cfg.headers,
        timeoutMs,
      }));
  const echo = createEchoProvider();
  const providers = new Map<string, { fingerprint: string; provider: Provider }>();
  const cooling = new Map<string, CooldownState>();
  // Warned once while the echo model stands in; a config with a provider re-arms the warning.
  let echoWarned = false;

  const noProviders = (cfg: Config): boolean => Object.keys(cfg.models.providers).length === 0;

  function providerFor(cfg: Config, name: string, model: string): Provider {
    const pc = cfg.models.providers[name];
    if (!pc) {
      if (name === ECHO_PROVIDER) return echo;
      const known = Object.keys(cfg.models.providers);
      throw new ModelError(
        "MODEL_NOT_CONFIGURED",
        `model ${name}/${model} names provider "${name}", which is not configured under models.providers` +
          (known.length ? ` (configured: ${known.join(", ")})` : ""),
        { provider: name, model },
      );
    }
    const timeoutMs = Math.round((pc.timeout_s ?? cfg.models.timeout_s) * 1000);
    const fingerprint = JSON.stringify([pc.base_url, pc.api_key, pc.headers, timeoutMs]);
    const cached = providers.get(name);
    if (cached && cached.fingerprint === fingerprint) return cached.provider;
    const provider = makeProvider(name, pc, timeoutMs);
    providers.set(name, { fingerprint, provider });
    return provider;
  }

  function chain(requested?: string): string[] {
    const cfg = opts.config();
    if (noProviders(cfg)) {
      const wanted = [requested, cfg.models.primary, ...cfg.models.fallbacks].filter(
        (r): r is string => r !== undefined,
      );
      // Only echo can answer; an explicit non-echo ref would fail, so say clearly what is going on.
      if (!echoWarned) {
        echoWarned = true;
        log.warn(
          { wanted },
          "NO MODEL PROVIDER CONFIGURED: replies come from the offline echo model (echo/echo). " +
            "Add one under models.providers and set models.primary to get real answers.",
        );
      }
      return [ECHO_MODEL_REF];
    }
    echoWarned = false;
    const first = requested ?? cfg.models.primary;
    if (first === undefined)
      throw new ModelError(
        "MODEL_NOT_CONFIGURED",
        `models.primary is not set; set it to a <provider>/<model> from models.providers (${Object.keys(cfg.models.providers).join(", ")})`,
      );
    return [...new Set([first, ...cfg.models.fallbacks])];
  }

  function coolingFor(ref: string): CooldownState | undefined {
    // Expired entries stay (until a success) so consecutive failures keep growing the cooldown.
    const c = cooling.get(ref);
    return c && c.until > clock.now() ? c : undefined;
  }

  function noteFailure(ref: string, err: ModelError): void {
    const prev = cooling.get(ref);
    const failures = (prev?.failures ?? 0) + 1;
    const ms = Math.max(
      Math.min(coolBase * 2 ** (failures - 1), coolMax),
      Math.min(err.info.retryAfterMs ?? 0, 3_600_000),
    );
    cooling.set(ref, { until: clock.now() + ms, failures, reason: err.code });
    log.warn(
      { model: ref, code: err.code, cooldownMs: ms, failures },
      `model ${ref} cooling down: ${err.message}`,
    );
  }

  function noteSuccess(ref: string): void {
    if (cooling.has(ref)) cooling.delete(ref);
  }

  // Context-window verdicts per config object (a reload swaps the object, so the cache follows it).
  let windowCache: { cfg: Config; verdicts: Map<string, ModelError | undefined> } | undefined;
  let agentWindows: ((agentId: string) => number | undefined) | undefined;
  /** The refusal of a model whose context window is below the minimum, or undefined. */
  function windowProblem(cfg: Config, ref: string, agentId: string | undefined): ModelError | undefined {
    if (windowCache?.cfg !== cfg) windowCache = { cfg, verdicts: new Map() };
    const verdicts = windowCache.verdicts;
    // A workspace or API agent's window can change without a config reload: it is part of the key.
    const own = agentId !== undefined && agentWindows ? agentWindows(agentId) : undefined;
    const agent = agentId !== undefined && agentWindows ? { id: agentId, context_window: own } : agentId;
    const key = agentId === undefined ? ref : `${agentId}\u0000${own ?? ""}\u0000${ref}`;
    if (verdicts.has(key)) return verdicts.get(key);
    let verdict: ModelError | undefined;
    try {
      validateContextWindow(resolveContextWindow(cfg, ref, agent), { modelRef: ref });
    } catch (err) {
      if (!(err instanceof ModelError)) throw err;
      verdict = err;
    }
    verdicts.set(key, verdict);
    return verdict;
  }

  async function* stream(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const cfg = opts.config();
    const refs = chain(req.model);
    const maxRetries = cfg.models.max_retries;
    const failures: { ref: string; err: ModelError }[] = [];
    let emitted = false;
    const wanted = req.model ?? cfg.models.primary;
    if (noProviders(cfg) && wanted !== undefined && wanted !== ECHO_MODEL_REF) {
      // The echo model stands in for a model that was asked for: the reply must say so, not just the log.
      yield { type: "text", delta: echoStandInNotice(wanted) };
    }

    for (const [i, ref] of refs.entries()) {
      const last = i === refs.length - 1;
      const cool = coolingFor(ref);
      if (cool && !last) {
        log.debug({ model: ref, until: cool.until }, "skipping model in cooldown");
        failures.push({
          ref,
          err: new ModelError("MODEL_RATE_LIMIT", `${ref} is cooling down after ${cool.reason}`, {}),
        });
        continue;
      }
      const { provider: pname, model } = parseModelRef(ref);
      const tooSmall = pname === ECHO_PROVIDER ? undefined : windowProblem(cfg, ref, req.agentId);
      if (tooSmall) {
        // A configuration problem of this model only: refused without a call; a fallback may answer.
        log.error({ model: ref, code: tooSmall.code }, tooSmall.message);
        failures.push({ ref, err: tooSmall });
        continue;
      }
      const provider =
        pname === ECHO_PROVIDER && !cfg.models.providers[ECHO_PROVIDER]
          ? echo
          : providerFor(cfg, pname, model);

      for (let attempt = 0; ; attempt++) {
        if (req.signal?.aborted)
          throw new ModelError("MODEL_ABORTED", "the request was aborted", { provider: pname, model });
        const attemptT0 = clock.now();
        try {
          for await (const ev of provider.stream({ ...req, model })) {
            if (ev.type === "done") {
              noteSuccess(ref);
              yield { ...ev, provider: pname, model };
              return;
            }
            if (ev.type === "text" || ev.type === "thinking" || ev.type === "tool_call") emitted = true;
            yield ev;
          }
          throw new ModelError("MODEL_BAD_STREAM", `${ref} ended without a done event`, {
            provider: pname,
            model,
          });
        } catch (e) {
          const baseUrl = cfg.models.providers[pname]?.base_url;
          const err = classifyModelError(e, { provider: pname, model, ...(baseUrl ? { baseUrl } : {}) });
          // Counted by the provider before it failed: in the ledger whatever happens next.
          const billed = e instanceof ModelError ? e.info.billed : undefined;
          if (billed) req.onBilled?.({ ...billed, provider: pname, model, code: err.code });
          if (err.code === "MODEL_ABORTED" || req.signal?.aborted) throw err;
          if (
            err.code === "MODEL_AUTH" ||
            err.code === "MODEL_BAD_REQUEST" ||
            err.code === "MODEL_NOT_CONFIGURED"
          ) {
            log.error({ model: ref, code: err.code }, err.message);
            throw err;
          }
          if (err.code === "MODEL_CONTEXT_OVERFLOW") throw err;
          if (emitted) {
            // Part of an answer already reached the user: falling back would answer twice.
            if (err.transient) noteFailure(ref, err);
            throw err;
          }
          const rateLimited = err.code === "MODEL_RATE_LIMIT";
          if (attempt < maxRetries && (!rateLimited || last)) {
            const wait = Math.max(
              Math.min(backoffBase * 2 ** attempt, backoffMax),
              Math.min(err.info.retryAfterMs ?? 0, 60_000),
            );
            log.warn(
              { model: ref, code: err.code, attempt: attempt + 1, waitMs: wait },
              `retrying ${ref}: ${err.message}`,
            );
            await sleep(clock, wait, req.signal).catch(() => {
              throw new ModelError("MODEL_ABORTED", "the request was aborted", { provider: pname, model });
            });
            // The trace's retry bar: the failed attempt and the wait after it.
            const retried = { model: ref, code: err.code, message: err.message, attempt: attempt + 1 };
            req.onRetry?.({ ...retried, next: "retry", waitMs: wait, durationMs: clock.now() - attemptT0 });
            continue;
          }
          noteFailure(ref, err);
          failures.push({ ref, err });
          const fallback = refs[i + 1];
          if (fallback) {
            const failed = { model: ref, code: err.code, message: err.message, attempt: attempt + 1 };
            const durationMs = clock.now() - attemptT0;
            req.onRetry?.({ ...failed, next: "fallback", fallback, waitMs: 0, durationMs });
          }
          break;
        }
      }
    }

    const lastErr = failures.at(-1)?.err;
    if (failures.length === 1 && lastErr) throw lastErr;
    throw new ModelError(
      "MODEL_ALL_FAILED",
      `every model failed: ${failures.map((f) => `${f.ref}: ${f.err.message}`).join("; ")}`,
      lastErr ? { ...lastErr.info, cause: lastErr } : {},
    );
  }

  function cooldowns(): CooldownInfo[] {
    const now = clock.now();
    const out: CooldownInfo[] = [];
    for (const [model, c] of cooling) {
      if (c.until <= now) continue;
      out.push({ model, until: c.until, remainingMs: c.until - now, failures: c.failures, reason: c.reason });
    }
    return out;
  }

  return {
    stream,
    chain,
    cooldowns,
    status(): RouterStatus {
      const usingEcho = noProviders(opts.config());
      const cd = cooldowns();
      let refs: string[];
      try {
        refs = chain();
      } catch (err) {
        return { state: "error", detail: (err as Error).message, chain: [], usingEcho, cooldowns: cd };
      }
      const detail = usingEcho
        ? "no provider configured: the offline echo model answers"
        : cd.length > 0
          ? `${cd.length} model(s) cooling down`
          : undefined;
      return {
        state: usingEcho || cd.length > 0 ? "degraded" : "ok",
        ...(detail ? { detail } : {}),
        chain: refs,
        usingEcho,
        cooldowns: cd,
      };
    },
    clearCooldown(model?: string): void {
      if (model === undefined) cooling.clear();
      else cooling.delete(model);
    },
    usingEcho: () => noProviders(opts.config()),
    useAgentWindows(lookup): void {
      agentWindows = lookup;
    },
  };
}
