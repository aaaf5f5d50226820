/**
 * Runs the Outbox contract against the daemon's implementation, the channel registry: in memory,
 * and backed by the core `kv` table in a real SQLite file (as the daemon wires it).
 */
import { ChannelError } from "../../internal/core/outbox.js";
import { ChannelRegistry } from "../../internal/channels/registry.js";
import { kvLastTargetStore } from "../../internal/channels/last-target-store.js";
import { MemoryChannel } from "../../internal/channels/memory-channel.js";
import { createTestCore } from "../helpers/core.js";
import { runOutboxContract, type OutboxHarness } from "./outbox-contract.js";

async function harness(
  registry: ChannelRegistry,
  extra: Partial<OutboxHarness> = {},
): Promise<OutboxHarness> {
  const ch = new MemoryChannel("mem");
  await ch.start();
  registry.add(ch);
  return {
    outbox: registry,
    target: "mem:owner",
    delivered: (target) => ch.sent.filter((s) => `mem:${s.target}` === target).map((s) => s.text),
    ownerWroteFrom: (target) => registry.setLastTarget(target),
    failDeliveries: () => {
      ch.failWith = new ChannelError("CHANNEL_REFUSED", "scripted refusal");
    },
    cleanup: async () => undefined,
    ...extra,
  };
}

runOutboxContract("channel registry (in memory)", () => harness(new ChannelRegistry()));

runOutboxContract("channel registry (kv-backed last target)", async () => {
  const core = createTestCore();
  return harness(new ChannelRegistry(kvLastTargetStore(core.ctx.db)), {
    reopen: () => new ChannelRegistry(kvLastTargetStore(core.ctx.db)),
    cleanup: async () => core.close(),
  });
});
