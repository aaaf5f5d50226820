/**
 * Opens the gateway's port. A clash names what to change (flag, environment, key) and, when /proc
 * shows it, the program holding the port, instead of Node's bare "listen EADDRINUSE".
 */
import type { AddressInfo } from "node:net";
import type { HttpServer } from "../gateway/http-server.js";
import type { Config } from "../config/schema.js";
import { PORT_ENV } from "../config/env-overrides.js";
import { describePortOwner } from "./port-owner.js";

/** The gateway port is taken or not ours to open. */
export class GatewayListenError extends Error {
  constructor(
    readonly code: "GATEWAY_PORT_IN_USE" | "GATEWAY_PORT_DENIED",
    message: string,
  ) {
    super(message);
    this.name = "GatewayListenError";
  }
}

/** Listens on gateway.bind:gateway.port; throws {@link GatewayListenError} with the fix on a clash. */
export async function listenGateway(http: HttpServer, cfg: Config, file: string): Promise<AddressInfo> {
  const { bind, port } = cfg.gateway;
  try {
    return await http.listen(port, bind);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const change = `choose another port with \`familiar run --port N\`, ${PORT_ENV}=N or gateway.port in ${file}`;
    if (code === "EADDRINUSE")
      throw new GatewayListenError(
        "GATEWAY_PORT_IN_USE",
        `gateway port ${port} on ${bind} is already in use by ${describePortOwner(port)}: stop it, or ${change}`,
      );
    if (code === "EACCES")
      throw new GatewayListenError(
        "GATEWAY_PORT_DENIED",
        `gateway port ${port} on ${bind} needs privileges this user lacks: ${change} (1024 or above)`,
      );
    throw err;
  }
}
