/**
 * Lazy access to the pairing store for gateway methods: the store (and its migrations) loads on the
 * first pairing call, never at daemon start.
 */
import type { PairingStore } from "../channels/common/pairing.js";
import { MethodError } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";

/** Returns a loader that builds the store once; `unavailable` when it cannot be opened. */
export function pairingLoader(rt: GatewayRuntime): () => Promise<PairingStore> {
  let store: PairingStore | undefined;
  return async () => {
    if (store) return store;
    try {
      const { PairingStore: Store } = await import("../channels/common/pairing.js");
      const s = new Store(rt.ctx.db, rt.ctx.clock);
      s.pending();
      return (store = s);
    } catch (err) {
      throw new MethodError("unavailable", `pairing is not available: ${(err as Error).message}`);
    }
  };
}
