import { describe, expect, it } from "vitest";
import { holdReason, repositoryRoots, type DeskEntry } from "./desk-rules.js";

const file = (rel: string, mode = 0o100644): DeskEntry => ({ rel, kind: "file", mode });
const dir = (rel: string): DeskEntry => ({ rel, kind: "dir", mode: 0o40755 });

describe("desk rules: an allow-list of plain data", () => {
  it("passes data files and plain folders at any depth", () => {
    for (const rel of ["out.csv", "report.pdf", "a/b/c/d/notes.md", "img/cat.PNG", "data.json", "x.tar.gz"])
      expect(holdReason(file(rel)), rel).toBeUndefined();
    expect(holdReason(dir("a/b/c/d"))).toBeUndefined();
  });

  it("holds every category at depth 0 and depth 4", () => {
    const cases: [DeskEntry, string][] = [
      [{ rel: "x", kind: "link", mode: 0o120777 }, "link"],
      [{ rel: "fifo", kind: "other", mode: 0o10644 }, "link"],
      [file(".envrc"), "hidden"],
      [file(".github/copilot-instructions.md"), "hidden"],
      [file(".continue/config.json"), "hidden"],
      [file("name\u202egnp.sh"), "hidden"],
      [file("HEAD"), "vcs"],
      [file("_darcs/format"), "vcs"],
      [file("package.json"), "packages"],
      [file("requirements-dev.txt"), "packages"],
      [file("node_modules/x/readme.md"), "packages"],
      [dir("node_modules"), "packages"],
      [file("GEMINI.md"), "instructions"],
      [file("AGENTS.md"), "instructions"],
      [file("run.csv", 0o100755), "executable"],
      [file("mise.local.toml"), "code"],
      [file("lefthook-local.yml"), "code"],
      [file("proj.code-workspace"), "code"],
      [file("config"), "code"],
      [file("Makefile"), "code"],
      [file("conftest.py"), "code"],
    ];
    for (const [e, want] of cases) {
      expect(holdReason(e), e.rel).toBe(want);
      expect(holdReason({ ...e, rel: `a/b/c/d/${e.rel}` }), `deep ${e.rel}`).toBe(want);
    }
  });

  it("lets the owner allow a category or a folder name, nothing by default", () => {
    expect(holdReason(file("node_modules/x/index.js"), new Set(["node_modules"]))).toBeUndefined();
    expect(holdReason(file("build.py"), new Set(["code"]))).toBeUndefined();
    expect(holdReason(file(".envrc"), new Set(["code"]))).toBe("hidden");
    // A category's name is not a folder name: `code/.envrc` stays held with `code` allowed.
    expect(holdReason(file("code/.envrc"), new Set(["code"]))).toBe("hidden");
    expect(holdReason(file("packages/x/.git/config"), new Set(["packages", "code"]))).toBe("hidden");
  });

  it("finds a bare repository whatever the folder is called", () => {
    const entries = [file("r/HEAD"), file("r/config"), dir("r/objects"), dir("r/refs"), file("s/HEAD")];
    expect(repositoryRoots(entries)).toEqual(["r"]);
    expect(repositoryRoots([file("HEAD"), dir("refs")])).toEqual([""]);
  });
});
