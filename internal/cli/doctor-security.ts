/**
 * The doctor's security lines (docs/security.md): owner data readable by other users (invariant 5),
 * symlinks in the places of the workspace the daemon reads (invariant 1), and workspace agent files
 * or skills refused because they tried to grant power (invariant 2). Each line names the path.
 */
import type { Config } from "../config/schema.js";
import { silentLogger } from "../log/logger.js";
import { looseModes, octal } from "../daemon/private-modes.js";
import { daemonPlaceLinks } from "../workspace/workspace-scan.js";
import { FileAgentSource } from "../agent/catalog/file-agents.js";
import { SkillsLoader } from "../skills/skills-loader.js";
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DESK, MIND_DIRS, MIND_FILES, zoneOf } from "../workspace/zones.js";
import { channelOwners, type OwnedChannel } from "../config/channel-owner.js";

/** One doctor line (the shape of doctor.ts's CheckResult; not imported, which would be a circle). */
interface CheckResult {
  status: "ok" | "warn" | "fail";
  name: string;
  detail: string;
}

/** How many paths one line names before "and N more". */
const SHOWN = 5;

function listed(items: string[]): string {
  const more = items.length > SHOWN ? `; and ${items.length - SHOWN} more` : "";
  return items.slice(0, SHOWN).join("; ") + more;
}

/**
 * Who answers approval questions on each enabled chat channel: `owner`, else `allow_from` (config,
 * never pairing); said so, and a warning when nobody is the owner there.
 */
export function checkOwners(cfg: Config): CheckResult[] {
  const out: CheckResult[] = [];
  for (const ch of ["telegram", "discord"] as OwnedChannel[]) {
    if (!cfg.channels[ch].enabled) continue;
    const o = channelOwners(cfg, ch);
    const name = `${ch} owner`;
    if (o.source === "owner")
      out.push({
        status: "ok",
        name,
        detail: `channels.${ch}.owner: ${o.ids.join(", ")} (only they answer questions)`,
      });
    else if (o.source === "allow_from")
      out.push({
        status: "ok",
        name,
        detail: `channels.${ch}.owner is not set: the owner is channels.${ch}.allow_from (${o.ids.join(", ")}), from config.yaml, never from pairing; set owner to say it explicitly`,
      });
    else
      out.push({
        status: "warn",
        name,
        detail: `nobody is the owner on ${ch}: channels.${ch}.owner and allow_from are empty, so no chat user can answer approval questions and every sender taints the session; set channels.${ch}.owner: [<your user id>]`,
      });
  }
  return out;
}

/** Private modes, planted links, refused workspace files, the chat owners. */
export function checkSecurity(cfg: Config, configPath: string): CheckResult[] {
  const out: CheckResult[] = [...checkOwners(cfg)];
  const loose = looseModes(cfg.data_dir, cfg.workspace, configPath);
  out.push(
    loose.length === 0
      ? {
          status: "ok",
          name: "private files",
          detail: "data dir, database, workspace and config are owner-only",
        }
      : {
          status: "warn",
          name: "private files",
          detail: `readable by other users: ${listed(loose.map((l) => `${l.what} ${l.path} is ${octal(l.mode)} (want ${octal(l.wanted)})`))}; the daemon narrows them at start, or chmod them now`,
        },
  );
  out.push(deskLayout(cfg));
  const links = daemonPlaceLinks(cfg.workspace);
  out.push(
    links.length === 0
      ? { status: "ok", name: "workspace links", detail: "no symbolic links where the daemon reads" }
      : {
          status: "warn",
          name: "workspace links",
          detail: `refused, never followed (a sandboxed command may have planted them; remove them): ${listed(links.map((l) => `${l.path} -> ${l.target}`))}`,
        },
  );
  const agents = new FileAgentSource(() => cfg, silentLogger());
  agents.load();
  const skills = new SkillsLoader({ workspace: () => cfg.workspace, disabled: () => cfg.skills.disabled });
  const refused = [
    ...agents.errors().map((e) => `${e.path}${e.key ? ` (${e.key})` : ""}: ${e.message}`),
    ...skills
      .listSkipped()
      .filter((s) => /refused|symbolic link/.test(s.reason))
      .map((s) => `${s.dir}: ${s.reason}`),
  ];
  if (refused.length > 0)
    out.push({ status: "warn", name: "workspace files", detail: `not loaded: ${listed(refused)}` });
  return out;
}

/**
 * The layout in one line (issue 43): where commands write, what the daemon alone writes, and what
 * is held. A desk that is not a real folder is a warning (the daemon moves it aside at start).
 */
function deskLayout(cfg: Config): CheckResult {
  const desk = join(cfg.workspace, DESK);
  const st = lstatSync(desk, { throwIfNoEntry: false });
  let others = 0;
  try {
    others = readdirSync(cfg.workspace).filter((n) => n !== DESK && zoneOf(n) === "other").length;
  } catch {
    /* no workspace yet: the daemon makes it */
  }
  const allowed = cfg.tools.exec.sandbox.desk_allow;
  const detail =
    `commands run in ${desk}/ and write only there; what they leave that is not plain data is held and asked about ` +
    `(allowed without asking: ${allowed.length ? allowed.join(", ") : "nothing"}, tools.exec.sandbox.desk_allow). ` +
    `The mind (${[...MIND_FILES.slice(0, 3), "...", ...MIND_DIRS.map((d) => `${d}/`)].join(", ")}) is written only by the daemon's tools and by you` +
    (others ? `; ${others} other file(s) of yours in the workspace are read-only to commands` : "");
  if (st && !st.isDirectory())
    return {
      status: "warn",
      name: "workspace layout",
      detail: `${desk} is not a folder (a link?); the daemon moves it aside at start. ${detail}`,
    };
  return { status: "ok", name: "workspace layout", detail };
}
