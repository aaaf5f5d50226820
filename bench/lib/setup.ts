/** A daemon with the gateway and the fake OpenAI server behind it: the common setup of the turn benchmarks. */
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-server.js";
import { fakeModels, startBenchDaemon, type BenchDaemon, type BenchDaemonOptions } from "./daemon.js";
import { chatTurn, pool } from "./client.js";

export interface GatewaySetup {
  fake: FakeOpenAI;
  daemon: BenchDaemon;
  close(): Promise<void>;
}

/** Starts the fake provider and a daemon using it; `config` is merged over `models`. */
export async function startGatewaySetup(
  opts: BenchDaemonOptions & { config?: Record<string, unknown> } = {},
): Promise<GatewaySetup> {
  const fake = await startFakeOpenAI({ maxRecorded: 20 });
  let daemon: BenchDaemon;
  try {
    daemon = await startBenchDaemon({
      ...opts,
      config: { models: fakeModels(fake.baseUrl), ...opts.config },
    });
  } catch (err) {
    await fake.close();
    throw err;
  }
  return {
    fake,
    daemon,
    async close() {
      await daemon.stop();
      await fake.close();
    },
  };
}

/** Warms the daemon up (JIT, prepared statements, pools): `n` turns over a few sessions. */
export async function warmUp(base: string, n = 200): Promise<void> {
  await pool(n, 4, async (i) => {
    await chatTurn(base, `warmup-${i % 8}`, `warm up ${i}`);
  });
}
