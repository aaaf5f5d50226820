/**
 * The owner's CLI with no token configured, as a user runs it (real `familiar run` child, real CLI
 * child processes): it finds the generated token and the running daemon's address card by itself,
 * keeps reaching the daemon after config.yaml changed the port or holds an invalid edit, shows the
 * restart-only changes, and `familiar dashboard` prints a `#token=` login link. Strangers get 401.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { cleanupDaemons, freePort, startDaemonProcess, runCli } from "../helpers/daemon.js";
import { waitFor } from "./harness.js";

afterAll(async () => {
  await cleanupDaemons();
});

function cli(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, cwd, env);
}

describe("the CLI and the running daemon, no token configured", () => {
  it("finds the token and the live address by itself, through a port edit and an invalid edit", async () => {
    const d = await startDaemonProcess();
    // The daemon's card: 0600, where it listens and where the token is, never the token.
    const card = join(d.dataDir, "gateway.json");
    expect(statSync(card).mode & 0o777).toBe(0o600);
    const info = JSON.parse(readFileSync(card, "utf8")) as Record<string, unknown>;
    expect(info).toMatchObject({
      pid: d.child.pid,
      url: d.url,
      port: d.port,
      token: { source: "file", file: join(d.dataDir, "gateway-token") },
    });
    expect(readFileSync(card, "utf8")).not.toContain(d.token());
    // A stranger without the token is refused; the log names the file, never the token.
    expect((await fetch(`${d.url}/api/sessions`)).status).toBe(401);
    // Log lines leave once per event-loop turn: wait for the start-up line rather than race it.
    await vi.waitFor(
      () => expect(d.stdoutLines().some((l) => l.includes(join(d.dataDir, "gateway-token")))).toBe(true),
      { timeout: 20_000, interval: 50 },
    );
    expect(d.stdoutLines().some((l) => l.includes(d.token()))).toBe(false);

    const status = await cli(["status", "--config", d.configPath], d.dir);
    expect(status.stderr).toBe("");
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^uptime/m);

    // The port changes in config.yaml: it waits for a restart, the CLI still reaches the daemon.
    const other = await freePort();
    const text = readFileSync(d.configPath, "utf8");
    writeFileSync(d.configPath, text.replace(`"port": ${d.port}`, `"port": ${other}`));
    await waitFor(() => d.stdoutLines().some((l) => /need a restart/.test(l)), 20_000);
    const after = await cli(["status", "--config", d.configPath], d.dir);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/restart +needed to apply gateway\.port/);
    expect(after.stdout).toContain(`running ${d.port}, config.yaml ${other}`);

    // An invalid edit: status still works and says so.
    writeFileSync(d.configPath, text.replace(`"port": ${d.port}`, `"port": "not-a-port"`));
    await waitFor(() => d.stdoutLines().some((l) => /config change rejected/.test(l)), 20_000);
    const broken = await cli(["status", "--config", d.configPath], d.dir);
    expect(broken.stderr).toBe("");
    expect(broken.code).toBe(0);
    expect(broken.stdout).toMatch(/config error [\s\S]*gateway\.port: expected an integer/);

    // The login link carries the token in the fragment only.
    const dash = await cli(["dashboard", "--config", d.configPath], d.dir);
    expect(dash.code).toBe(0);
    expect(dash.stdout.trim()).toBe(`${d.url}/#token=${encodeURIComponent(d.token())}`);
    // --open hands the browser a 0600 page that forwards to the link: the token never appears on a
    // command line (readable by every local user).
    const browser = join(d.dir, "browser.sh");
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$*" > "${join(d.dir, "browser-args")}"\n`, {
      mode: 0o755,
    });
    const opened = await cli(["dashboard", "--open", "--config", d.configPath], d.dir, { BROWSER: browser });
    expect(opened.code).toBe(0);
    const args = await waitFor(
      () => existsSync(join(d.dir, "browser-args")) && readFileSync(join(d.dir, "browser-args"), "utf8"),
    );
    expect(args).toBe(`file://${join(d.dataDir, "dashboard-login.html")}`);
    expect(args).not.toContain(d.token());
    const login = join(d.dataDir, "dashboard-login.html");
    expect(statSync(login).mode & 0o777).toBe(0o600);
    expect(readFileSync(login, "utf8")).toContain(
      JSON.stringify(`${d.url}/#token=${encodeURIComponent(d.token())}`),
    );

    // A clean stop removes the card.
    expect((await d.stop()).code).toBe(0);
    expect(existsSync(card)).toBe(false);
    expect(existsSync(join(d.dataDir, "gateway-token"))).toBe(true);
  }, 120_000);
});
