/** The memory line of `familiar doctor`, and config errors of `memory.*` that name the key. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runDoctor } from "../../internal/cli/doctor.js";
import { configFromObject } from "../../internal/config/load.js";
import { startFakeEmbeddings, type FakeEmbeddings } from "../fakes/embeddings-server.js";

let fake: FakeEmbeddings | undefined;
let dir: string | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function doctorMemoryLine(
  memory: string,
  providers: string,
): Promise<{ status: string; detail: string }> {
  dir = mkdtempSync(join(tmpdir(), "familiar-mdoc-"));
  mkdirSync(join(dir, "workspace"));
  const file = join(dir, "config.yaml");
  writeFileSync(
    file,
    `data_dir: ${join(dir, "data")}\nworkspace: ${join(dir, "workspace")}\ngateway:\n  enabled: false\nmodels:\n  providers:\n${providers}\nmemory:\n${memory}\n`,
  );
  const checks = await runDoctor(file, { env: {}, timeoutMs: 2000 });
  const m = checks.find((c) => c.name === "memory");
  if (!m) throw new Error(`no memory check in ${JSON.stringify(checks)}`);
  return m;
}

describe("doctor: memory", () => {
  it("reports the embedding model's dimension and that sqlite-vec loads", async () => {
    fake = await startFakeEmbeddings({ modelDims: { "nomic-embed-text": 768 } });
    const m = await doctorMemoryLine(
      "  embeddings: {provider: local, model: nomic-embed-text}",
      `    local: {base_url: "${fake.baseUrl}"}`,
    );
    expect(m.status).toBe("ok");
    expect(m.detail).toMatch(/^local\/nomic-embed-text answers, 768 dimensions; sqlite-vec v\d+\.\d+\.\d+$/);
  });

  it("fails when the embedding model does not answer, and says memory falls back to keywords", async () => {
    fake = await startFakeEmbeddings();
    fake.setDown(500);
    const m = await doctorMemoryLine(
      "  embeddings: {provider: local, model: e}",
      `    local: {base_url: "${fake.baseUrl}"}`,
    );
    expect(m.status).toBe("fail");
    expect(m.detail).toContain("embedding with local/e failed");
    expect(m.detail).toContain("falls back to keywords");
  });

  it("without embeddings: keyword search, offline", async () => {
    const m = await doctorMemoryLine("  sessions: false", "    {}");
    expect(m).toMatchObject({ status: "ok" });
    expect(m.detail).toMatch(/^keyword search only .*sqlite-vec v\d/);
  });

  it("names the key of a bad memory config", () => {
    expect(() => configFromObject({ memory: { embeddings: { provider: "nope", model: "m" } } })).toThrow(
      /memory\.embeddings\.provider: expected a provider configured under models\.providers \(none configured\), got "nope"/,
    );
    expect(() => configFromObject({ memory: { embeddings: { provider: "x" } } })).toThrow(
      /memory\.embeddings\.model/,
    );
    expect(() => configFromObject({ memory: { max_result_chars: 10 } })).toThrow(/memory\.max_result_chars/);
  });
});
