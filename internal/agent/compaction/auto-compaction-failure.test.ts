/**
 * An automatic compaction that fails never fails the turn: it is logged and the turn goes on with the
 * uncompacted history. The failure is real: a SQLite trigger makes the compaction's transaction abort
 * (as a full or broken disk would), with the real host, compactor, router and fake OpenAI server.
 */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { TestCore } from "../../../test/helpers/core.js";
import { useFakeModelSuite } from "../../../test/helpers/fake-model-suite.js";
import { createLogger } from "../../log/logger.js";
import { resolveContextWindow } from "../../models/context-window.js";
import { createModelRouter } from "../../models/router.js";
import type { AgentEvent } from "../../core/agent-events.js";
import { createAgentHost } from "../host.js";
import { createHostCompactor } from "./host-compactor.js";

const KEY = "agent:main:gateway:failing-compaction";
const suite = useFakeModelSuite();
let core: TestCore | undefined;

describe("auto-compaction failure", () => {
  it("is logged and the turn goes on uncompacted", async () => {
    core = suite.createCore({
      models: {
        providers: {
          f: { base_url: suite.fake.baseUrl, api_key: "sk-test", models: { m: { context_window: 16_384 } } },
        },
        primary: "f/m",
        max_retries: 0,
      },
      agents: { defaults: { compact: { memory_flush: false, keep_last_n: 2 } } },
    });
    const ctx = core.ctx;
    const lines: string[] = [];
    const logger = createLogger({
      level: "warn",
      destination: new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString());
          cb();
        },
      }),
    });
    ctx.db.exec(
      "CREATE TRIGGER fail_compaction BEFORE INSERT ON compaction_summaries BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END;",
    );
    const router = createModelRouter({ config: ctx.config, logger: ctx.logger, clock: ctx.clock });
    const compactor = createHostCompactor({
      db: ctx.db,
      config: ctx.config,
      model: router,
      logger,
      contextWindow: (ref, agentId) => resolveContextWindow(ctx.config(), ref ?? "f/m", agentId),
    });
    const host = createAgentHost({ ctx, model: router, compactor });
    suite.fake.setHandler((req) => {
      const sys = String(req.body?.messages?.[0]?.content ?? "");
      return /^You (compress|merge)/.test(sys)
        ? { text: "- a summary" }
        : { text: `answer ${req.body?.messages?.length ?? 0}` };
    });
    const long = "The shipment to warehouse W-12 is delayed by customs paperwork again. ".repeat(100);
    const notices: AgentEvent[] = [];
    const perTurn: number[] = [];
    for (let i = 0; i < 8; i++) {
      const before = suite.fake.requests.length;
      const r = await host.submit({ channel: "gateway", sessionKey: KEY, text: `${i}: ${long}` }, (e) => {
        if (e.type === "notice") notices.push(e);
      }).result;
      expect(r.error).toBeUndefined();
      expect(r.finishReason).toBe("stop");
      expect(r.text).toMatch(/^answer \d+$/);
      perTurn.push(suite.fake.requests.length - before);
    }
    // Compaction was attempted once (over budget), failed, and was not retried on every later call
    // (each attempt costs summariser calls); nothing changed.
    const failures = lines.filter((l) => l.includes("auto-compaction failed; continuing without it"));
    expect(failures).toHaveLength(1);
    expect(perTurn.filter((n) => n > 1)).toHaveLength(1); // one turn paid for the summaries
    expect(perTurn.at(-1)).toBe(1); // later turns: just their own model call
    expect(failures[0]).toContain("injected");
    expect(notices).toEqual([]);
    const sessions = host.sessions.list(KEY);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]!.archived_at).toBeNull();
    expect(host.sessions.messages(sessions[0]!.id)).toHaveLength(16);
    // The last turn still sent the whole history.
    expect(suite.fake.requests.at(-1)!.body!.messages!.length).toBe(17); // + the context note (clock)
  });
});
