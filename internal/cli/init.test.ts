/**
 * `familiar init` copies the pristine template: in a git checkout the shipped `workspace/` is also
 * the owner's live workspace, so edits and notes there must not reach a new home. Real git, real
 * files in a temp dir.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { initDir } from "./init.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A package root with the config template and a two-file workspace template. */
function packageRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "familiar-init-"));
  dirs.push(root);
  mkdirSync(join(root, "internal", "config"), { recursive: true });
  writeFileSync(join(root, "internal", "config", "config-template.yaml"), "workspace: ./workspace\n");
  // The checkout's own config.yaml with the owner's edits: never a source.
  writeFileSync(join(root, "config.yaml"), "workspace: ./mine # sk-owner-secret\n");
  mkdirSync(join(root, "workspace", "memory"), { recursive: true });
  writeFileSync(join(root, "workspace", "SOUL.md"), "pristine soul\n");
  writeFileSync(join(root, "workspace", "memory", ".gitkeep"), "");
  return root;
}

function git(root: string, ...args: string[]): void {
  execFileSync("git", ["-C", root, ...args], {
    stdio: "ignore",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.invalid",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.invalid",
    },
  });
}

describe("initDir", () => {
  it("in a checkout, copies the committed template, not the owner's edits or notes", () => {
    const root = packageRoot();
    git(root, "init", "-q");
    git(root, "add", ".");
    git(root, "commit", "-q", "-m", "template");
    // The owner used the checkout's workspace: an edited SOUL.md and a daily note.
    writeFileSync(join(root, "workspace", "SOUL.md"), "my private soul\n");
    writeFileSync(join(root, "workspace", "memory", "2026-11-24.md"), "my bank PIN is 1234\n");

    const home = join(root, "..", `${root.split("/").pop()}-home`);
    dirs.push(home);
    const r = initDir(home, root);
    expect(r.existing).toEqual([]);
    expect(readFileSync(join(home, "workspace", "SOUL.md"), "utf8")).toBe("pristine soul\n");
    // Issue 43: the owner's settings are the owner's alone, whatever the umask.
    expect(statSync(join(home, "config.yaml")).mode & 0o777).toBe(0o600);
    expect(existsSync(join(home, "workspace", "memory", ".gitkeep"))).toBe(true);
    expect(existsSync(join(home, "workspace", "memory", "2026-11-24.md"))).toBe(false);
    expect(readFileSync(join(home, "config.yaml"), "utf8")).toBe("workspace: ./workspace\n");
  });

  it("outside a checkout (an installed package), copies the files as they are", () => {
    const root = packageRoot();
    const home = join(root, "home");
    const r = initDir(home, root);
    expect(r.written).toContain(join(home, "workspace", "SOUL.md"));
    expect(readFileSync(join(home, "workspace", "SOUL.md"), "utf8")).toBe("pristine soul\n");
    // Issue 43: the owner's settings are the owner's alone, whatever the umask.
    expect(statSync(join(home, "config.yaml")).mode & 0o777).toBe(0o600);
  });
});
