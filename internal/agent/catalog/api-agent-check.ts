/**
 * What an agent defined from outside config.yaml may not set, though config.yaml may: a `prompt_file`
 * outside the workspace (a token holder, or a planted backup row, must not pull arbitrary host files
 * such as the gateway token into a prompt) and the program a CLI engine runs ({@link cliProgramKey}).
 * One check for every such door: the API (agents-routes.ts) and `familiar restore` (a backup's
 * `api_agents` rows), so an agent restored is an agent the API would accept.
 */
import { isAbsolute, normalize } from "node:path";
import type { AgentConfig } from "../../config/schema.js";
import { cliProgramKey } from "./file-agents.js";
import { zoneOf } from "../../workspace/zones.js";

/** The field an API agent may not have and why, or undefined when it may be stored. */
export function apiAgentProblem(def: AgentConfig): { field: string; message: string } | undefined {
  const f = def.prompt_file;
  if (f !== undefined) {
    const n = normalize(f);
    if (isAbsolute(f) || n === ".." || n.startsWith("../") || n.startsWith("..\\"))
      return { field: "prompt_file", message: "prompt_file: must be a relative path inside the workspace" };
    // The desk is where commands write: a prompt read from it would be the sandbox's to write.
    if (zoneOf(f) === "desk")
      return {
        field: "prompt_file",
        message: "prompt_file: must not be on the desk (commands can write it); use templates/ or prompts/",
      };
  }
  const program = cliProgramKey(def);
  if (program)
    return {
      field: program,
      message: `${program}: the program of a CLI engine cannot be set over the API; define such agents in config.yaml`,
    };
  return undefined;
}
