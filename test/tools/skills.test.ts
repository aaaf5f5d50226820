import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createToolsHarness, waitFor, type ToolsHarness } from "./harness.js";

let h: ToolsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function skill(root: string, folder: string, front: string, body: string): void {
  mkdirSync(join(root, folder), { recursive: true });
  writeFileSync(join(root, folder, "SKILL.md"), `---\n${front}\n---\n${body}\n`);
}

describe("skills", () => {
  it("lists the bundled skills compactly and loads one with the skill tool", async () => {
    h = await createToolsHarness();
    const names = h.parts.skills.list().map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["daily-journal", "reminders", "web-summary"]));
    const section = h.parts.skills.promptSection() ?? "";
    expect(section).toContain("- reminders: Create, list and cancel reminders");
    expect(section).not.toContain("## Create"); // bodies are not in the prompt
    expect(section.length).toBeLessThan(600);
    const r = await h.call("skill", { name: "reminders" });
    expect(r.content).toMatch(/^# Skill: reminders\n\(folder: .*skills\/reminders\)/);
    expect(r.content).toContain('`cron` with `action: "add"`');
    const unknown = await h.call("skill", { name: "nope" });
    expect(unknown.isError).toBe(true);
    expect(unknown.content).toContain("available: daily-journal");
  });

  it("prefers a workspace skill, skips missing requirements and honours skills.disabled", async () => {
    h = await createToolsHarness({ skills: { disabled: ["daily-journal"] } });
    const ws = join(h.workspace, "skills");
    skill(ws, "reminders", "name: reminders\ndescription: My own reminders flow", "Use my paper diary.");
    skill(
      ws,
      "needs-bin",
      "name: needs-bin\ndescription: x\nrequires:\n  bins: [definitely-not-installed-xyz]",
      "body",
    );
    skill(
      ws,
      "needs-env",
      "name: needs-env\ndescription: x\nrequires:\n  env: [FAMILIAR_TEST_UNSET_VAR]",
      "body",
    );
    skill(ws, "has-sh", "name: has-sh\ndescription: Uses the shell\nrequires:\n  bins: [sh]", "shell stuff");
    skill(ws, "pinned", "name: pinned\ndescription: Always on\nalways: true", "ALWAYS FOLLOW THIS RULE.");
    h.parts.skills.reload();
    const byName = new Map(h.parts.skills.list().map((s) => [s.name, s]));
    expect(byName.get("reminders")?.source).toBe("workspace");
    expect(byName.get("reminders")?.description).toBe("My own reminders flow");
    expect((await h.call("skill", { name: "reminders" })).content).toContain("Use my paper diary.");
    expect(byName.has("has-sh")).toBe(true);
    expect(byName.has("needs-bin")).toBe(false);
    expect(byName.has("needs-env")).toBe(false);
    expect(byName.has("daily-journal")).toBe(false);
    const skipped = Object.fromEntries(h.parts.skills.listSkipped().map((s) => [s.name, s.reason]));
    expect(skipped["needs-bin"]).toBe("missing binaries: definitely-not-installed-xyz");
    expect(skipped["needs-env"]).toBe("missing environment variables: FAMILIAR_TEST_UNSET_VAR");
    expect(skipped["daily-journal"]).toBe("disabled in skills.disabled");
    const section = h.parts.skills.promptSection() ?? "";
    expect(section).toContain("### Skill: pinned\nALWAYS FOLLOW THIS RULE.");
    expect(section).not.toContain("- pinned:");
  });

  it("hot-reloads when a skill folder is added", async () => {
    h = await createToolsHarness({}, { start: true });
    mkdirSync(join(h.workspace, "skills"), { recursive: true });
    skill(join(h.workspace, "skills"), "late", "name: late\ndescription: Arrived later", "late body");
    await waitFor(() => h?.parts.skills.get("late"), 20_000, "the new skill to load");
    expect(h.parts.skills.promptSection()).toContain("- late: Arrived later");
  });

  it("follows a workspace change: the new workspace's skills load and hot-reload", async () => {
    h = await createToolsHarness({}, { start: true });
    const next = join(h.core.dir, "workspace2");
    mkdirSync(join(next, "skills"), { recursive: true });
    skill(join(next, "skills"), "moved", "name: moved\ndescription: In the new workspace", "body");
    h.core.setConfig({ workspace: next });
    await waitFor(() => h?.parts.skills.get("moved"), 20_000, "the new workspace's skill");
    expect(h.parts.skills.get("late")).toBeUndefined();
    skill(join(next, "skills"), "later", "name: later\ndescription: Added after the move", "body");
    await waitFor(() => h?.parts.skills.get("later"), 20_000, "a skill added to the new workspace");
  });
});
