/**
 * `familiar dashboard [--open]`: prints (and with `--open` opens) a login link for the web pages of
 * the running daemon. The token travels in the URL fragment (`#token=`), which browsers never send to
 * a server, so it reaches no access log and no Referer; the page stores it and drops it from the
 * address bar at once.
 */
import { spawn } from "node:child_process";
import { resolveGatewayTarget } from "../gateway/target.js";

export interface DashboardOptions {
  config: string;
  url?: string;
  token?: string;
  open?: boolean;
}

/** The login link for a gateway base URL and token. */
export function dashboardLink(httpBase: string, token: string): string {
  return `${httpBase}/#token=${encodeURIComponent(token)}`;
}

/** The command that opens a URL in the desktop's browser, per platform. */
function opener(): { cmd: string; args: string[] } {
  if (process.platform === "darwin") return { cmd: "open", args: [] };
  if (process.platform === "win32") return { cmd: "cmd", args: ["/c", "start", '""'] };
  return { cmd: process.env.BROWSER || "xdg-open", args: [] };
}

/** Runs the command; returns the exit code. */
export async function dashboardCommand(
  opts: DashboardOptions,
  out: (s: string) => void = (s) => process.stdout.write(s),
  err: (s: string) => void = (s) => process.stderr.write(s),
): Promise<number> {
  const target = resolveGatewayTarget(opts);
  if (!target.token) {
    err(
      "familiar dashboard: no gateway token found (gateway.token, FAMILIAR_GATEWAY_TOKEN or <data_dir>/gateway-token); start the daemon once so it creates one\n",
    );
    return 1;
  }
  const link = dashboardLink(target.httpBase, target.token);
  const up = await fetch(`${target.httpBase}/healthz`, { signal: AbortSignal.timeout(3000) }).then(
    () => true,
    () => false,
  );
  out(`${link}\n`);
  if (!up)
    err(`familiar dashboard: note: nothing answers at ${target.httpBase} yet (is the daemon running?)\n`);
  else err("Open this link to log in to the web chat (it carries your token: do not share it).\n");
  if (!opts.open) return 0;
  const { cmd, args } = opener();
  return new Promise<number>((resolve) => {
    const child = spawn(cmd, [...args, link], { stdio: "ignore", detached: true });
    child.once("error", (e) => {
      err(`familiar dashboard: could not start ${cmd} (${e.message}); open the link above yourself\n`);
      resolve(1);
    });
    child.once("spawn", () => {
      child.unref();
      resolve(0);
    });
  });
}
