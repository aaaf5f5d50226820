/**
 * What a turn commits for a model call: its usage row and trace point ride in the commit of the call's
 * answer (one commit, both or neither), and when that commit fails the usage is still recorded on its
 * own, so a paid call is never dropped with its answer. Real SQLite file, real host, fake OpenAI server.
 */
import { describe, expect, it } from "vitest";
import type { TestCore } from "../../test/helpers/core.js";
import { useFakeModelSuite } from "../../test/helpers/fake-model-suite.js";
import { createModelRouter } from "../models/router.js";
import { createAgentHost, type AgentHostImpl } from "./host.js";

const suite = useFakeModelSuite();
let core: TestCore | undefined;

function setup(): AgentHostImpl {
  const c = suite.createCore({
    models: {
      providers: { a: { base_url: suite.fake.baseUrl, api_key: "sk-a" } },
      primary: "a/m1",
      max_retries: 0,
      timeout_s: 5,
    },
  });
  core = c;
  const router = createModelRouter({
    config: () => c.ctx.config(),
    logger: c.ctx.logger,
    clock: c.ctx.clock,
  });
  return createAgentHost({ ctx: c.ctx, model: router });
}

const count = (sql: string, ...args: unknown[]): number =>
  (core!.ctx.db.prepare(sql).get(...args) as { n: number }).n;

describe("turn recorder commits", () => {
  it("stores the answer, its usage row and its trace point together", async () => {
    const host = setup();
    suite.fake.enqueue({ text: "Hello there." });
    const r = await host.submit({ channel: "test", sessionKey: "k", text: "hi" }).result;
    expect(r.finishReason).toBe("stop");
    expect(count("SELECT COUNT(*) AS n FROM usage WHERE request_id = ?", r.requestId)).toBe(1);
    expect(
      count("SELECT COUNT(*) AS n FROM messages WHERE role = 'assistant' AND request_id = ?", r.requestId),
    ).toBe(1);
    expect(
      count("SELECT COUNT(*) AS n FROM traces WHERE kind = 'model' AND request_id = ?", r.requestId),
    ).toBe(1);
  });

  it("records the usage of a call whose answer cannot be stored, and says why", async () => {
    const host = setup();
    // The disk refuses the answer (a trigger stands in for SQLITE_FULL on that one insert).
    core!.ctx.db.exec(`CREATE TRIGGER refuse_answers BEFORE INSERT ON messages WHEN NEW.role = 'assistant'
      BEGIN SELECT RAISE(ABORT, 'no room for answers'); END`);
    suite.fake.enqueue({ text: "An answer the store will refuse." });
    const r = await host.submit({ channel: "test", sessionKey: "k", text: "hi" }).result;
    expect(r.finishReason).toBe("error");
    expect(r.text).toMatch(/could not save this conversation/);
    expect(suite.fake.requests).toHaveLength(1);
    // The call was made and paid: its usage row is kept though its answer is not.
    expect(count("SELECT COUNT(*) AS n FROM usage WHERE request_id = ?", r.requestId)).toBe(1);
    expect(
      count("SELECT COUNT(*) AS n FROM messages WHERE role = 'assistant' AND request_id = ?", r.requestId),
    ).toBe(0);
  });
});
