/**
 * `POST /hooks/<name>`: inbound webhooks configured under `gateway.hooks`. Each hook authenticates
 * with its own `secret` (bearer or `X-Familiar-Secret`) or an HMAC-SHA256 signature of the raw body
 * (`hmac_secret`; `X-Hub-Signature-256: sha256=<hex>` as GitHub sends it, or `X-Familiar-Signature`
 * in the same format); a hook with neither needs the gateway token. A delivery runs once: a repeated
 * delivery id or signed body inside the hook's `replay_window` is answered 200 `duplicate` and not
 * run (hook-replay.ts). A request without any credential is refused without counting as a guess.
 * The message (the `template` with `{{body}}` / `{{json.path}}`, or the raw body) is injected into the
 * hook's session through the front desk (the hook's `agent`, else `agents.default`); the reply is
 * optionally delivered to a channel target. Answers 202 at once.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { safeEqual, verifyHmacSignature } from "./auth.js";
import {
  bearerToken,
  clientAddress,
  decodePathSegment,
  HttpError,
  readBody,
  sendError,
  toHttpError,
} from "./http-util.js";
import { sendJson } from "./http-util.js";
import { routeSessionParam } from "./methods-chat.js";
import { deliveryIdOf, HookReplayGuard } from "./hook-replay.js";
import type { GatewayRuntime } from "./runtime.js";

/** Renders a hook template: `{{body}}` is the raw body, `{{json.a.b}}` a field of the JSON body. */
export function renderTemplate(template: string | undefined, raw: string): string {
  if (template === undefined) return raw;
  let parsed: unknown;
  let parsedOnce = false;
  return template.replace(/\{\{\s*([a-zA-Z0-9_.[\]-]+)\s*\}\}/g, (_m, expr: string) => {
    if (expr === "body") return raw;
    if (!expr.startsWith("json.") && expr !== "json") return "";
    if (!parsedOnce) {
      parsedOnce = true;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = undefined;
      }
    }
    let cur: unknown = parsed;
    for (const seg of expr
      .split(".")
      .slice(1)
      .flatMap((s) => s.split(/[[\]]/).filter(Boolean))) {
      if (cur === null || typeof cur !== "object") return "";
      cur = (cur as Record<string, unknown>)[seg];
    }
    if (cur === undefined || cur === null) return "";
    return typeof cur === "string" ? cur : JSON.stringify(cur);
  });
}

/** The signature header a request carries: GitHub's `X-Hub-Signature-256`, else `X-Familiar-Signature`. */
function signatureOf(req: IncomingMessage): string | undefined {
  const h = req.headers["x-hub-signature-256"] ?? req.headers["x-familiar-signature"];
  return typeof h === "string" ? h : undefined;
}

export function webhookRoutes(rt: GatewayRuntime) {
  let replay: HookReplayGuard | undefined;
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> => {
    if (!url.pathname.startsWith("/hooks/")) return false;
    try {
      const name = decodePathSegment(url.pathname.slice("/hooks/".length));
      const cfg = rt.ctx.config();
      const hook = Object.hasOwn(cfg.gateway.hooks, name) ? cfg.gateway.hooks[name] : undefined;
      const addr = clientAddress(req);
      // The same 404 as any unknown route: a stranger cannot probe which hook names exist.
      if (!hook) throw new HttpError(404, "not_found", `no route for ${req.method} ${url.pathname}`);
      if (req.method !== "POST")
        throw new HttpError(405, "method_not_allowed", "webhooks accept POST only", { allow: "POST" });
      const raw = await readBody(req, cfg.gateway.max_body_bytes);
      let ok: boolean;
      if (hook.hmac_secret || hook.secret) {
        const h = req.headers["x-familiar-secret"];
        const presented = hook.hmac_secret
          ? signatureOf(req)
          : (bearerToken(req) ?? (typeof h === "string" ? h : undefined));
        // No credential at all is not a guess; a wrong one is, and a guessing source waits its turn.
        if (presented === undefined) ok = false;
        else {
          const busy = await rt.auth.turn(addr);
          if (busy) throw busy;
          ok = hook.hmac_secret
            ? verifyHmacSignature(hook.hmac_secret, raw, presented)
            : safeEqual(presented, hook.secret ?? "");
          if (!ok) rt.auth.recordFailure(addr);
        }
      } else {
        ok = (await rt.auth.check(addr, bearerToken(req))).ok;
      }
      if (!ok)
        throw new HttpError(
          401,
          "unauthorized",
          hook.hmac_secret
            ? "missing or invalid X-Hub-Signature-256 / X-Familiar-Signature (sha256=<hex HMAC-SHA256 of the raw body>)"
            : "missing or invalid webhook secret",
        );
      const text = renderTemplate(hook.template, raw.toString("utf8"));
      if (!text.trim()) throw new HttpError(400, "empty_message", "the webhook produced an empty message");
      const desk = rt.maybeFrontDesk();
      if (!desk) throw new HttpError(503, "unavailable", "the agent host is not running");
      // The hook's agent, else the default; the session key is in the 202, so it is routed first.
      const { agentId, sessionKey } = routeSessionParam(desk, {
        channel: "hook",
        ...(hook.agent !== undefined ? { agentId: hook.agent } : {}),
        session: { named: hook.session },
      });
      replay ??= new HookReplayGuard(rt.ctx.db, () => rt.ctx.clock.now());
      const claim = replay.claim(
        name,
        hook.replay_window,
        deliveryIdOf(req.headers),
        hook.hmac_secret ? raw : undefined,
      );
      if (!claim.ok) {
        // 200, not an error: a sender's retry of a delivery we took must not be shown as failed.
        sendJson(res, 200, {
          accepted: false,
          duplicate: true,
          message: `this delivery was already accepted (same ${claim.matched} within ${hook.replay_window / 1000} s); not run again`,
        });
        return true;
      }
      let handle: ReturnType<typeof desk.admit>;
      try {
        handle = desk.admit({
          channel: "hook",
          agentId,
          session: { key: sessionKey },
          text,
          sender: { id: `hook:${name}` },
          originLabel: `webhook "${name}"`,
          // Containment: a webhook body is written by whoever can call the hook, never the owner.
          taint: [{ kind: "webhook", detail: name }],
          ...(hook.deliver !== "none" ? { replyTarget: hook.deliver } : {}),
        });
      } catch (err) {
        replay.release(claim.marks);
        throw err;
      }
      const deliver = hook.deliver;
      void handle.result.then(async (r) => {
        if (deliver === "none" || !r.text) return;
        try {
          await rt.deps.channels.deliver(deliver, r.text);
        } catch (err) {
          rt.ctx.logger.warn(
            { hook: name, target: deliver, err: (err as Error).message },
            "webhook reply delivery failed",
          );
        }
      });
      sendJson(res, 202, { accepted: true, runId: handle.runId, sessionKey });
    } catch (err) {
      const e = toHttpError(err);
      if (!res.headersSent) sendError(res, e);
    }
    return true;
  };
}
