/**
 * Issue 35: the files the agent writes are never tracked. On a fresh copy of the repository (its
 * committed files and .gitignore in a new git repository), a daemon whose workspace is the copy's
 * workspace/ remembers a fact and a note (the real memory_write tool, asked by the fake model), and
 * `git status` stays clean: the owner's facts never reach a commit.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./fakes/openai-server.js";
import { REPO_ROOT, startDaemonProcess, type DaemonProcess } from "./helpers/daemon.js";

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
};
const git = (cwd: string, ...args: string[]): string =>
  execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8" });

let clone: string;
let fake: FakeOpenAI;
let d: DaemonProcess | undefined;

beforeAll(async () => {
  clone = mkdtempSync(join(tmpdir(), "familiar-fresh-clone-"));
  // The committed workspace and .gitignore, as a clone has them.
  const tracked = git(REPO_ROOT, "ls-files", "-c", "--", "workspace", ".gitignore")
    .split("\n")
    .filter((f) => f && existsSync(join(REPO_ROOT, f)));
  for (const f of tracked) {
    mkdirSync(dirname(join(clone, f)), { recursive: true });
    copyFileSync(join(REPO_ROOT, f), join(clone, f));
  }
  git(clone, "init", "-q");
  git(clone, "add", ".");
  git(clone, "commit", "-q", "-m", "clone");
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await d?.cleanup();
  await fake?.close();
  rmSync(clone, { recursive: true, force: true });
});

describe("the agent's own files", () => {
  it("a memory write in a fresh clone leaves git status clean", async () => {
    expect(git(clone, "ls-files", "workspace")).not.toContain("MEMORY.md");
    d = await startDaemonProcess({
      config: {
        workspace: join(clone, "workspace"),
        models: {
          providers: { fake: { base_url: fake.baseUrl, api_key: "sk-fake" } },
          primary: "fake/test-model",
          max_retries: 0,
        },
      },
    });
    fake.enqueue({
      toolCalls: [
        { id: "c1", name: "memory_write", arguments: { kind: "fact", text: "the owner likes tea" } },
        { id: "c2", name: "memory_write", arguments: { kind: "note", text: "talked about tea" } },
      ],
    });
    fake.enqueue({ text: "Noted." });
    const r = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      headers: d.headers(),
      body: JSON.stringify({
        model: "familiar",
        messages: [{ role: "user", content: "remember I like tea" }],
      }),
    });
    expect(r.status).toBe(200);
    expect(readFileSync(join(clone, "workspace", "MEMORY.md"), "utf8")).toContain("the owner likes tea");
    expect(git(clone, "status", "--porcelain", "--untracked-files=all")).toBe("");
  });
});
