/**
 * The `skill` tool: loads one skill's full instructions on demand, so the system prompt only carries
 * names and one-line descriptions.
 */
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../tools/tool.js";
import type { SkillsLoader } from "./skills-loader.js";

const schema = z.object({ name: z.string().min(1) }).strict();

export function createSkillTool(loader: SkillsLoader): Tool<typeof schema> {
  return defineTool({
    name: "skill",
    group: "skills",
    description: "Load a skill's instructions (see Skills).",
    schema,
    async execute(args) {
      const info = loader.get(args.name);
      if (!info) {
        const names = loader.list().map((s) => s.name);
        throw new ToolError(
          "SKILL_UNKNOWN",
          `no skill named "${args.name}"; available: ${names.length ? names.join(", ") : "none"}`,
        );
      }
      const body = loader.body(args.name);
      if (body === undefined)
        throw new ToolError("SKILL_UNREADABLE", `skill "${args.name}" could not be read`);
      return `# Skill: ${info.name}\n(folder: ${info.dir})\n\n${body}`;
    },
  });
}
