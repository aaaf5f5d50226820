/**
 * The shared middle of a chat channel (Telegram, Discord): its stream relay, with the preview and
 * delivery ledgers that make replies restart-safe, and the inbound router that hands accepted
 * messages to the front desk (the daemon's one, or its own when none is given). Each channel supplies its platform adapter and its own settings.
 */
import type { CoreContext } from "../../runtime/context.js";
import { DeliveryLedger } from "./delivery-ledger.js";
import { InboundRouter, type InboundDeps } from "../../inbound/chat-router.js";
import { PreviewLedger } from "./preview-ledger.js";
import { StreamRelay, type ChatAdapter } from "./stream-relay.js";

/** A channel's `stream` settings (config.yaml `channels.<id>.stream`). */
export interface StreamSettings {
  mode: "edit" | "off";
  edit_interval_ms: number;
  show_tools: boolean;
}

/** Builds the relay and router of channel `channel`. */
export function createChatPipeline(
  ctx: CoreContext,
  channel: string,
  adapter: ChatAdapter,
  opts: Pick<
    InboundDeps,
    | "desk"
    | "host"
    | "registry"
    | "approvals"
    | "agentSources"
    | "mayApprove"
    | "isOwner"
    | "ownerTarget"
    | "privateAllowed"
    | "media"
  > & {
    /** Read on every turn: a hot reload applies to the next reply. */
    stream: () => StreamSettings;
  },
): { relay: StreamRelay; router: InboundRouter } {
  const now = (): number => ctx.clock.now();
  const relay = new StreamRelay(
    adapter,
    ctx.clock,
    () => {
      const s = opts.stream();
      return { mode: s.mode, editIntervalMs: s.edit_interval_ms, showTools: s.show_tools };
    },
    ctx.logger,
    new PreviewLedger(ctx.db, channel, now, ctx.startedAt),
    new DeliveryLedger(ctx.db, channel, now, ctx.startedAt),
  );
  const router = new InboundRouter({
    ctx,
    ...(opts.desk ? { desk: opts.desk } : {}),
    host: opts.host,
    relay,
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.approvals ? { approvals: opts.approvals } : {}),
    ...(opts.agentSources ? { agentSources: opts.agentSources } : {}),
    ...(opts.mayApprove ? { mayApprove: opts.mayApprove } : {}),
    ...(opts.isOwner ? { isOwner: opts.isOwner } : {}),
    ...(opts.ownerTarget ? { ownerTarget: opts.ownerTarget } : {}),
    ...(opts.privateAllowed ? { privateAllowed: opts.privateAllowed } : {}),
    ...(opts.media ? { media: opts.media } : {}),
  });
  return { relay, router };
}
