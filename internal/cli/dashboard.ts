/**
 * `familiar dashboard [--open]`: prints (and with `--open` opens) a login link for the web pages of
 * the running daemon. The token travels in the URL fragment (`#token=`), which browsers never send to
 * a server, so it reaches no access log and no Referer; the page stores it and drops it from the
 * address bar at once.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { resolveGatewayTarget } from "../gateway/target.js";
import { dataDirOf } from "../gateway/runtime-file.js";

export interface DashboardOptions {
  config: string;
  url?: string;
  token?: string;
  open?: boolean;
  /** Link to the owner's console (`/console/`) instead of the web chat. */
  console?: boolean;
}

/** The login link for a gateway base URL and token. */
export function dashboardLink(httpBase: string, token: string, page: "/" | "/console/" = "/"): string {
  return `${httpBase}${page}#token=${encodeURIComponent(token)}`;
}

/** Writes `<data_dir>/dashboard-login.html` (0600), which sends the browser on to `link`. */
function loginPage(dataDir: string, link: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, "dashboard-login.html");
  const target = JSON.stringify(link).replace(/</g, "\\u003c");
  writeFileSync(
    file,
    `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>Familiar</title><script>location.replace(${target})</script>\n`,
    { mode: 0o600 },
  );
  chmodSync(file, 0o600); // an older file keeps its mode through writeFileSync
  return pathToFileURL(file).href;
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
      "familiar dashboard: no gateway token found (gateway.token, FAMILIAR_GATEWAY_TOKEN or <data_dir>/gateway-token); start the daemon once so it creates one, or name its config with --config PATH or FAMILIAR_CONFIG\n",
    );
    return 1;
  }
  const link = dashboardLink(target.httpBase, target.token, opts.console ? "/console/" : "/");
  const up = await fetch(`${target.httpBase}/healthz`, { signal: AbortSignal.timeout(3000) }).then(
    () => true,
    () => false,
  );
  out(`${link}\n`);
  if (!up)
    err(`familiar dashboard: note: nothing answers at ${target.httpBase} yet (is the daemon running?)\n`);
  else
    err(
      `Open this link to log in to the ${opts.console ? "owner's console" : "web chat"} (it carries your token: do not share it).\n`,
    );
  if (!opts.open) return 0;
  // The browser is handed a 0600 file that redirects to the link, not the link itself: a command
  // line is readable by every local user (ps, /proc/<pid>/cmdline), the owner's data dir is not.
  const page = loginPage(dataDirOf(opts.config), link);
  const { cmd, args } = opener();
  return new Promise<number>((resolve) => {
    const child = spawn(cmd, [...args, page], { stdio: "ignore", detached: true });
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
