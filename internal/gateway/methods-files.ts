/** Websocket method `files.send`: the gateway's twin of the `send_file` tool (see api/files-route.ts). */
import { ToolError } from "../tools/tool.js";
import { sendFileBody, sendFileFromGateway } from "./api/files-route.js";
import { MethodError, type MethodErrorCode } from "./protocol.js";
import type { GatewayRuntime } from "./runtime.js";
import type { MethodHandler } from "./ws-server.js";

export function fileMethods(rt: GatewayRuntime): [string, MethodHandler][] {
  const send: MethodHandler = async (p) => {
    const parsed = sendFileBody.safeParse(p.o);
    if (!parsed.success)
      throw new MethodError(
        "invalid_params",
        parsed.error.issues.map((i) => `${i.path.join(".") || "params"}: ${i.message}`).join("; "),
      );
    try {
      return { result: await sendFileFromGateway(rt, parsed.data) };
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      const code: MethodErrorCode =
        err.code === "FILE_NOT_FOUND"
          ? "not_found"
          : err.code.startsWith("PATH_")
            ? "forbidden"
            : "invalid_params";
      throw new MethodError(code, err.message);
    }
  };
  return [["files.send", send]];
}
