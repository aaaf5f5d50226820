/**
 * Issue 34: the `v1_responses` migration to sessions upgrades an existing database. A response stored
 * before chains were sessions (gateway migration 2, no session) still answers `GET /v1/responses/{id}`,
 * and a follow-up from it forks a new session seeded with its conversation.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import OpenAI from "openai";
import { openDatabase } from "../../internal/store/db.js";
import { allMigrations } from "../../internal/daemon/migrations.js";
import { gatewayMigrations } from "../../internal/gateway/turn-idempotency-migrations.js";
import { startGatewayDaemon, type GatewayHarness } from "./harness.js";

const TOKEN = "v1-upgrade-token";
const dir = mkdtempSync(join(tmpdir(), "familiar-v1-upgrade-"));
let h: GatewayHarness | undefined;
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("a pre-session response upgrades, is read back, and a follow-up forks a session from it", async () => {
  const dataDir = join(dir, "data");
  const old = openDatabase(dataDir, {
    migrations: { ...allMigrations, gateway: gatewayMigrations.slice(0, 2) },
  });
  const conversation = [
    { role: "user", content: "Remember 7." },
    { role: "assistant", content: "Noted: 7." },
  ];
  const output = [{ id: "msg_old", type: "message", status: "completed", role: "assistant", content: [] }];
  old
    .prepare(
      "INSERT INTO v1_responses (id, agent_id, conversation, response, created_at) VALUES (?, ?, ?, ?, ?)",
    )
    .run(
      "resp_old",
      null,
      JSON.stringify(conversation),
      JSON.stringify({ id: "resp_old", object: "response", output }),
      1,
    );
  old.close();

  h = await startGatewayDaemon({ gateway: { token: TOKEN }, config: { data_dir: dataDir } });
  const v = h.daemon.db.prepare("SELECT version FROM schema_version WHERE namespace = 'gateway'").get() as {
    version: number;
  };
  expect(v.version).toBe(3);
  const client = new OpenAI({ baseURL: `${h.base}/v1`, apiKey: TOKEN, maxRetries: 0 });
  expect((await client.responses.retrieve("resp_old")).id).toBe("resp_old");

  h.fake.enqueue({ text: "You said 7." });
  const { data, response } = await client.responses
    .create({ model: "familiar", input: "What number?", previous_response_id: "resp_old" })
    .withResponse();
  expect(data.output_text).toBe("You said 7.");
  expect(response.headers.get("x-familiar-session")).toBe(`agent:main:gateway:${data.id}`);
  const seen = (h.fake.requests[0]?.body?.messages ?? [])
    .filter((m) => m.role !== "system")
    .map((m) => String(m.content).split("\n")[0]);
  expect(seen).toEqual(["Remember 7.", "Noted: 7.", "What number?"]);
});
