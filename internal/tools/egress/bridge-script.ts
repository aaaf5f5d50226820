/**
 * The bridge that runs inside the sandbox (with the daemon's own node binary, bound read-only): it
 * listens on a loopback port of the sandbox's private network namespace and forwards every
 * connection to the egress proxy's unix socket. It decides nothing: the proxy outside does.
 * Once listening it creates `/tmp/.familiar-egress` so the wrapper knows it may start the command.
 */
export const BRIDGE_SCRIPT = `"use strict";
const net = require("node:net");
const fs = require("node:fs");
const [sock, port] = process.argv.slice(2);
const server = net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u);
  u.pipe(c);
  c.on("error", () => u.destroy());
  u.on("error", () => c.destroy());
});
server.listen(Number(port), "127.0.0.1", () => fs.writeFileSync("/tmp/.familiar-egress", ""));
`;
