/**
 * The agents subsystem's session queries (seed `agents-subsystem.txt`: `agents/sessions/memory`,
 * `agents/sessions/files`) over REST:
 *
 * - `GET /api/agents/{id}/sessions/{sid}/memory` -> `{session_id, content, source}`: the session's
 *   working memory beyond its raw messages, i.e. the summary its latest compaction carries (`source:
 *   "compaction"`), or `""` (`source: null`) for a session never compacted;
 * - `GET /api/agents/{id}/sessions/{sid}/files` -> `{session_id, files: [{name, size_bytes,
 *   modified}]}`: the workspace files this session's tools wrote, edited or sent that still exist.
 *
 * Invariant: the paths come from stored tool-call arguments, which the model (and so anyone who
 * can talk to it) wrote: a path is listed only when it resolves, symlinks followed, to a regular
 * file inside the workspace; anything else is left out, never stat'ed outside.
 */
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { SUMMARY_MARKER } from "../../agent/compaction/prompts.js";
import { sendJson, type ApiContext } from "./api-context.js";
import type { ApiRoute } from "./api-route.js";

/** Tools whose `path` argument names a workspace file the session produced or handed out. */
const FILE_TOOLS = new Set(["write_file", "edit_file", "send_file"]);

function inside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

export function sessionExtraRoutes(api: ApiContext): ApiRoute[] {
  const summary = api.db.prepare<[string], { content: string }>(
    "SELECT content FROM messages WHERE session_id = ? AND role = 'system' AND status = 'summary' ORDER BY id DESC LIMIT 1",
  );
  const calls = api.db.prepare<[string], { tool_calls: string }>(
    "SELECT tool_calls FROM messages WHERE session_id = ? AND role = 'assistant' AND tool_calls IS NOT NULL ORDER BY id",
  );
  return [
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid/memory",
      handler: ({ res, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        const row = summary.get(s.id);
        const content = row ? row.content.replace(SUMMARY_MARKER, "").trim() : "";
        sendJson(res, 200, { session_id: s.id, content, source: row ? "compaction" : null });
      },
    },
    {
      method: "GET",
      pattern: "/api/agents/:id/sessions/:sid/files",
      handler: ({ res, params }) => {
        const s = api.session(params.id ?? "", params.sid ?? "");
        let root: string;
        try {
          root = realpathSync(api.config().workspace);
        } catch {
          sendJson(res, 200, { session_id: s.id, files: [] });
          return;
        }
        const seen = new Map<string, { name: string; size_bytes: number; modified: string }>();
        for (const r of calls.all(s.id)) {
          let list: unknown;
          try {
            list = JSON.parse(r.tool_calls);
          } catch {
            continue;
          }
          if (!Array.isArray(list)) continue;
          for (const c of list as { name?: unknown; arguments?: unknown }[]) {
            if (typeof c.name !== "string" || !FILE_TOOLS.has(c.name) || typeof c.arguments !== "string")
              continue;
            let path: unknown;
            try {
              path = (JSON.parse(c.arguments) as { path?: unknown }).path;
            } catch {
              continue;
            }
            if (typeof path !== "string" || path === "") continue;
            try {
              const real = realpathSync(resolve(root, path));
              if (!inside(root, real)) continue;
              const st = statSync(real);
              if (!st.isFile()) continue;
              const name = relative(root, real).split(sep).join("/");
              seen.set(name, { name, size_bytes: st.size, modified: st.mtime.toISOString() });
            } catch {
              // Gone since, or never created: nothing to list.
            }
          }
        }
        sendJson(res, 200, {
          session_id: s.id,
          files: [...seen.values()].sort((a, b) => a.name.localeCompare(b.name)),
        });
      },
    },
  ];
}
