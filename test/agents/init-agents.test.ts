/**
 * `familiar init` seeds the default-on agent templates as agent files: the real CLI writes them, the
 * real daemon loads them, seeding again writes nothing and never overwrites the user's edits.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AGENT_TEMPLATES } from "../../internal/agent/catalog/templates.js";
import { seedAgentTemplates } from "../../internal/cli/init.js";
import { cleanupDaemons, startDaemonProcess, runCli } from "../helpers/daemon.js";

const dirs: string[] = [];
afterEach(async () => {
  await cleanupDaemons();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "familiar-init-agents-"));
  dirs.push(d);
  return d;
}

function cli(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, cwd);
}

const DEFAULT_ON = AGENT_TEMPLATES.filter((t) => t.defaultOn).map((t) => t.id);

describe("familiar init seeds agent templates", () => {
  it("writes the default-on templates as agent files that the daemon loads", async () => {
    expect(DEFAULT_ON).toEqual(["data-analyst", "research-synthesiser"]);
    expect(AGENT_TEMPLATES.map((t) => t.id)).toHaveLength(4);
    const dir = tempDir();
    const r = await cli(["init", dir], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "Seeded agents: workspace/agents/data-analyst.yaml, workspace/agents/research-synthesiser.yaml.",
    );
    for (const t of AGENT_TEMPLATES) {
      const file = join(dir, "workspace", "agents", `${t.id}.yaml`);
      expect(existsSync(file)).toBe(t.defaultOn);
      if (t.defaultOn) expect(readFileSync(file, "utf8")).toContain(`name: ${t.id}`);
    }

    // The real daemon on this workspace lists them as file agents, with no errors on /healthz.
    const d = await startDaemonProcess({ dir, config: { gateway: { token: "t" } } });
    const health = (await (await fetch(`${d.url}/healthz`)).json()) as {
      services: Record<string, { state: string }>;
    };
    expect(health.services.agents?.state).toBe("ok");
    const list = (await (
      await fetch(`${d.url}/api/agents`, { headers: { authorization: "Bearer t" } })
    ).json()) as { agents: { id: string; source: string; system_prompt?: string }[] };
    for (const id of DEFAULT_ON) {
      const a = list.agents.find((x) => x.id === id);
      expect(a?.source).toBe("file");
      expect(a?.system_prompt).toBe(AGENT_TEMPLATES.find((t) => t.id === id)?.system_prompt);
    }
  });

  it("is idempotent and never overwrites an agent file", () => {
    const ws = join(tempDir(), "workspace");
    const first = seedAgentTemplates(ws);
    expect(first.map((f) => f.slice(ws.length + 1))).toEqual([
      "agents/data-analyst.yaml",
      "agents/research-synthesiser.yaml",
    ]);
    const mine = "name: data-analyst\ndescription: my own edits\n";
    writeFileSync(join(ws, "agents", "data-analyst.yaml"), mine);
    expect(seedAgentTemplates(ws)).toEqual([]);
    expect(readFileSync(join(ws, "agents", "data-analyst.yaml"), "utf8")).toBe(mine);

    // A deleted seed comes back on the next seeding; the edited one stays as it is.
    rmSync(join(ws, "agents", "research-synthesiser.yaml"));
    expect(seedAgentTemplates(ws)).toEqual([join(ws, "agents", "research-synthesiser.yaml")]);
    expect(readFileSync(join(ws, "agents", "data-analyst.yaml"), "utf8")).toBe(mine);
  });

  it("a second init refuses and leaves the seeded files alone", async () => {
    const dir = tempDir();
    expect((await cli(["init", dir], dir)).code).toBe(0);
    const file = join(dir, "workspace", "agents", "data-analyst.yaml");
    writeFileSync(file, "name: data-analyst\ndescription: edited\n");
    const again = await cli(["init", dir], dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("refusing to overwrite existing files");
    expect(readFileSync(file, "utf8")).toBe("name: data-analyst\ndescription: edited\n");
  });
});
