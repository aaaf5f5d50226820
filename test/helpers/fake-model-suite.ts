/**
 * Test helper: the vitest hooks of a test file that drives the real agent host against the fake
 * OpenAI server. One fake server for the file; every test core made through `createCore` is closed,
 * and the fake's queue and recorded requests are reset, after each test.
 */
import { afterAll, afterEach, beforeAll } from "vitest";
import type { Clock } from "../../internal/core/clock.js";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";
import { createTestCore, type TestCore } from "./core.js";

export interface FakeModelSuite {
  /** The file's fake OpenAI server (started before the first test). */
  readonly fake: FakeOpenAI;
  /** `createTestCore`, closed after the test. */
  createCore(configObj?: Record<string, unknown>, opts?: { clock?: Clock; dir?: string }): TestCore;
}

/** Registers the hooks; call once at the top level of a test file. */
export function useFakeModelSuite(): FakeModelSuite {
  let fake: FakeOpenAI | undefined;
  const cores: TestCore[] = [];
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake?.close();
  });
  afterEach(() => {
    fake?.reset();
    for (const c of cores.splice(0)) c.close();
  });
  return {
    get fake(): FakeOpenAI {
      if (!fake) throw new Error("the fake OpenAI server starts in beforeAll: use it inside a test");
      return fake;
    },
    createCore(configObj, opts) {
      const core = createTestCore(configObj, opts);
      cores.push(core);
      return core;
    },
  };
}
