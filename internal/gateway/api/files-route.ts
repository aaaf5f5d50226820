/**
 * `POST /api/files/send` (and the websocket method `files.send`): send a workspace file to a chat,
 * the gateway's twin of the `send_file` tool. The gateway token is required like every `/api` route;
 * the path is confined to the workspace (safe-open.ts) and sizes checked against the platform's
 * limit before the upload.
 */
import { z } from "zod";
import { ToolError } from "../../tools/tool.js";
import { sendWorkspaceFile } from "../../tools/send-file.js";
import type { GatewayRuntime } from "../runtime.js";
import { sendJson, type ApiContext } from "./api-context.js";
import { apiError } from "./api-errors.js";
import type { ApiRoute } from "./api-route.js";

/** The body of a file send. */
export const sendFileBody = z
  .object({
    target: z.string().regex(/^[a-z][\w-]*:.+$/, { error: "expected a target such as telegram:123" }),
    path: z.string().min(1, { error: "must not be empty" }),
    caption: z.string().max(4000).optional(),
    as: z.enum(["auto", "document", "photo", "audio", "voice"]).default("auto"),
  })
  .strict();

/** Sends one file; throws ToolError for refusals (path outside, too large, unknown target). */
export function sendFileFromGateway(rt: GatewayRuntime, body: z.infer<typeof sendFileBody>): Promise<string> {
  return sendWorkspaceFile(rt.deps.channels, {
    workspace: rt.ctx.config().workspace,
    target: body.target,
    path: body.path,
    as: body.as,
    ...(body.caption !== undefined ? { caption: body.caption } : {}),
  });
}

/** HTTP status of a refused send. */
export function sendFileStatus(code: string): number {
  if (code.startsWith("PATH_") || code === "FILE_NOT_REGULAR" || code === "FILE_IS_DIR") return 400;
  if (code === "FILE_NOT_FOUND") return 404;
  if (code === "FILE_TOO_LARGE") return 413;
  return 502;
}

export function fileRoutes(api: ApiContext): ApiRoute[] {
  return [
    {
      method: "POST",
      pattern: "/api/files/send",
      handler: async ({ req, res }) => {
        const body = await api.body(req, sendFileBody);
        try {
          const result = await sendFileFromGateway(api.rt, body);
          sendJson(res, 200, { ok: true, result });
        } catch (err) {
          if (err instanceof ToolError)
            throw apiError(sendFileStatus(err.code), err.code.toLowerCase(), err.message);
          throw err;
        }
      },
    },
  ];
}
