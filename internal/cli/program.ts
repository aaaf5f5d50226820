/**
 * Command definitions (commander). Each action lazy-imports its implementation.
 *
 * Over 300 lines on purpose: this is the one table of every `familiar` command, its options and
 * help text, read top to bottom as the CLI's reference; each action only checks its arguments and
 * lazy-imports its implementation, so there is no logic here worth splitting out.
 */
import { Command } from "commander";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { registerCronCommands } from "./cron.js";
import { registerStoreCommands } from "./program-store.js";
import { packageRoot } from "../config/package-root.js";
import { suggest } from "../config/errors.js";
import { configRefusal, IMPLICIT_CONFIG, resolveConfigPath } from "./config-path.js";

function version(): string {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string })
      .version;
  } catch {
    return "0.0.0";
  }
}

const DEFAULT_CONFIG = process.env.FAMILIAR_CONFIG ?? IMPLICIT_CONFIG;

export function buildProgram(): Command {
  const program = new Command("familiar")
    .description("Familiar: a self-hosted personal-assistant daemon")
    .version(version(), "-v, --version");

  // A command run outside the checkout finds the running daemon's config (cli/config-path.ts). Not
  // `run` (it starts a daemon, never reuses another's config) nor `init`. Whatever the source, a
  // config in a workspace, or one another user owns or may write, is refused (gateway/owner-files.ts).
  program.hook("preAction", (_program, action) => {
    if (action.name() === "init") return;
    const given = action.opts<{ config?: unknown }>().config;
    if (typeof given !== "string") return;
    let path = given;
    if (action.name() !== "run") {
      const found = resolveConfigPath(given);
      if (found.note) process.stderr.write(`${found.note}\n`);
      path = found.path;
    }
    const refused = configRefusal(path);
    if (refused) {
      process.stderr.write(`familiar: ${refused}\n`);
      process.exit(1);
    }
    if (path !== given) action.setOptionValue("config", path);
  });

  program
    .command("run", { isDefault: true })
    .description("run the daemon")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("-p, --port <port>", "gateway port, over gateway.port and FAMILIAR_PORT (env)")
    // Read by the entry before this parser runs (cmd/runtime-tuning.ts); declared so it is accepted.
    .option("--heap-mb <mb>", "V8 heap cap in MB (default 96, 0 = no cap; env FAMILIAR_HEAP_MB)")
    // `run` is the default command, so commander hands it any unknown word (a typo of a command):
    // answer that as an unknown command with a suggestion, not "too many arguments for 'run'".
    .allowExcessArguments(true)
    .action(async (opts: { config: string; port?: string }, cmd: Command) => {
      const word = cmd.args[0];
      if (word !== undefined) {
        const names = program.commands.map((c) => c.name());
        const hint = suggest(word, names);
        program.error(
          `familiar: unknown command '${word}'${hint ? `; did you mean '${hint}'?` : ""} (familiar --help lists them)`,
          { code: "commander.unknownCommand" },
        );
      }
      const { runCommand } = await import("./run.js");
      await runCommand(opts.config, opts.port);
    });

  program
    .command("stop")
    .description("stop the running daemon of this config (it drains first, as on Ctrl-C)")
    .option("-c, --config <path>", "config file of the daemon", DEFAULT_CONFIG)
    .action(async (opts: { config: string }) => {
      const { stopCommand } = await import("./stop.js");
      process.exitCode = await stopCommand(opts);
    });

  program
    .command("restart")
    .description("stop the daemon and start it again in the background (log: <data_dir>/familiar.log)")
    .option("-c, --config <path>", "config file of the daemon", DEFAULT_CONFIG)
    .action(async (opts: { config: string }) => {
      const { restartCommand } = await import("./stop.js");
      process.exitCode = await restartCommand(opts);
    });

  program
    .command("logs")
    .description("follow the running daemon's log (the last lines, then new ones; Ctrl-C ends)")
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("-n, --lines <n>", "how many past lines first (at most 500)", "50")
    .option("--no-follow", "print the last lines and exit")
    .option("--json", "the raw JSON log lines")
    .option("--url <url>", "gateway websocket URL (default: the running daemon, then the config)")
    .option("--token <token>", "gateway token (default: the running daemon's, then the config's)")
    .action(
      async (opts: {
        config: string;
        lines?: string;
        follow?: boolean;
        json?: boolean;
        url?: string;
        token?: string;
      }) => {
        const { logsCommand } = await import("./logs.js");
        process.exitCode = await logsCommand(opts);
      },
    );

  program
    .command("init [dir]")
    .description("write a commented config.yaml and the workspace template into DIR (default: here)")
    .action(async (dir: string | undefined) => {
      const { initCommand } = await import("./init.js");
      initCommand(dir);
    });

  const configCmd = program.command("config").description("configuration commands");
  configCmd
    .command("check")
    .description("validate the config: print every error with its key path (exit 1), or a summary")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .action(async (opts: { config: string }) => {
      const { configCheckCommand } = await import("./config-check.js");
      configCheckCommand(opts);
    });

  program
    .command("doctor")
    .description("check Node, config, data dir, workspace, gateway port, model providers and channel tokens")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--live", "also probe each channel of the running daemon and report the round trip")
    .action(async (opts: { config: string; live?: boolean }) => {
      const { doctorCommand } = await import("./doctor.js");
      await doctorCommand(opts);
    });

  program
    .command("backup")
    .description("write a consistent snapshot (database, workspace, config) while the daemon runs")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--to <dir>", "where the snapshot goes (default: backup.dir, else <data_dir>/backups)")
    .action(async (opts: { config: string; to?: string }) => {
      const { backupCommand } = await import("./backup.js");
      await backupCommand(opts);
    });

  program
    .command("restore <dir>")
    .description("restore a snapshot into a stopped instance (refused while its daemon runs)")
    .option(
      "-c, --config <path>",
      "config file of the instance (written from the backup if absent, with --accept config)",
      DEFAULT_CONFIG,
    )
    .option(
      "--check",
      "check the backup and print what a restore would bring back, ask and refuse; write nothing",
    )
    .option("--accept <keys>", "take these rows that grant power (keys from --check, comma-separated)")
    .option("--accept-all-risky", "take everything that would otherwise need your confirmation")
    .action(
      async (
        dir: string,
        opts: { config: string; check?: boolean; accept?: string; acceptAllRisky?: boolean },
      ) => {
        const { restoreCommand } = await import("./backup.js");
        await restoreCommand(dir, opts);
      },
    );

  program
    .command("chat")
    .description("chat with the daemon in the terminal (over the gateway websocket)")
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("-s, --session <name>", "session name or full session key", "cli")
    .option("-a, --agent <id>", "agent to talk to (default agent when absent)")
    .option("--url <url>", "gateway websocket URL (default from config)")
    .option("--token <token>", "gateway token (default: the running daemon's, then the config's)")
    .option("--verbose", "after each reply, print its request id (for familiar trace)")
    .action(
      async (opts: {
        config: string;
        session?: string;
        agent?: string;
        url?: string;
        token?: string;
        verbose?: boolean;
      }) => {
        const { chatCommand } = await import("./chat.js");
        await chatCommand(opts);
      },
    );

  program
    .command("status")
    .description("show the running daemon's status")
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("--url <url>", "gateway websocket URL (default from config)")
    .option("--token <token>", "gateway token (default: the running daemon's, then the config's)")
    .option("--json", "print the raw status as JSON")
    .action(async (opts: { config: string; url?: string; token?: string; json?: boolean }) => {
      const { statusCommand } = await import("./status.js");
      await statusCommand(opts);
    });

  program
    .command("dashboard")
    .description("print a login link for the web chat (with --open, open it in the browser)")
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("--url <url>", "gateway URL (default: the running daemon, then the config)")
    .option("--token <token>", "gateway token (default: found like the other commands)")
    .option("--open", "open the link in the default browser")
    .option("--console", "link to the owner's console (/console/) instead of the web chat")
    .action(
      async (opts: { config: string; url?: string; token?: string; open?: boolean; console?: boolean }) => {
        const { dashboardCommand } = await import("./dashboard.js");
        process.exitCode = await dashboardCommand(opts);
      },
    );

  program
    .command("approvals [action] [id] [scope]")
    .description(
      "list pending approval requests, show one whole (approvals show <id>), settle one (approvals approve <id> [once|host|session] [--hash <sha256>] | deny <id>), or list and revoke containment grants (approvals grants | revoke <grant>)",
    )
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("--url <url>", "gateway websocket URL (default: the running daemon, then the config)")
    .option("--token <token>", "gateway token (default: the running daemon's, then the config's)")
    .option("--json", "print JSON (list, show)")
    .option(
      "--hash <sha256>",
      "approve/deny only if the request still shows this payload (from approvals show)",
    )
    .action(
      async (
        action: string | undefined,
        id: string | undefined,
        scope: string | undefined,
        opts: { config: string; url?: string; token?: string; json?: boolean; hash?: string },
      ) => {
        const a = action ?? "list";
        if (
          a !== "list" &&
          a !== "show" &&
          a !== "approve" &&
          a !== "deny" &&
          a !== "grants" &&
          a !== "revoke"
        ) {
          process.stderr.write(
            `familiar approvals: unknown action "${a}" (list, show, approve, deny, grants, revoke)\n`,
          );
          process.exitCode = 1;
          return;
        }
        const { approvalsCommand } = await import("./approvals.js");
        process.exitCode = await approvalsCommand(a, id, { ...opts, ...(scope ? { scope } : {}) });
      },
    );

  program
    .command("usage")
    .description("show token usage and cost (reads the database directly; safe while the daemon runs)")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--since <when>", "period start: a duration back from now (7d, 12h) or an ISO date", "30d")
    .option("--json", "print the report as JSON")
    .option(
      "--reconcile <file>",
      "compare the ledger with a provider's usage export (OpenAI cost or activity CSV, OpenRouter activity CSV)",
    )
    .option("--provider <name>", "with --reconcile: the models.providers entry the export is of")
    .action(
      async (opts: {
        config: string;
        since?: string;
        json?: boolean;
        reconcile?: string;
        provider?: string;
      }) => {
        if (opts.reconcile) {
          const { reconcileCommand } = await import("./usage-reconcile.js");
          process.exitCode = await reconcileCommand({ ...opts, file: opts.reconcile });
          return;
        }
        const { usageCommand } = await import("./usage.js");
        await usageCommand(opts);
      },
    );

  const sessions = program
    .command("sessions")
    .description("list sessions, show one, walk their compaction lineage, compact one");
  sessions
    .command("list")
    .description("sessions, most recently active first (reads the database directly)")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--prefix <prefix>", "only keys starting with this (e.g. agent:main:telegram)")
    .option("--limit <n>", "at most this many", "50")
    .option("--all", "include archived (compacted or reset) sessions")
    .option("--json", "print JSON")
    .action(
      async (opts: { config: string; prefix?: string; limit?: string; all?: boolean; json?: boolean }) => {
        const { sessionsListCommand } = await import("./sessions.js");
        sessionsListCommand(opts);
      },
    );
  sessions
    .command("lineage <session>")
    .description("ancestors, successors and summaries of a session id or key")
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--json", "print JSON")
    .action(async (ref: string, opts: { config: string; json?: boolean }) => {
      const { sessionsLineageCommand } = await import("./sessions.js");
      process.exitCode = sessionsLineageCommand(ref, opts);
    });
  sessions
    .command("show <session>")
    .description(
      "one session (id or key): its messages with times and request ids, and its taint if it read untrusted text",
    )
    .option("-c, --config <path>", "config file", DEFAULT_CONFIG)
    .option("--limit <n>", "the last this many messages", "50")
    .option("--json", "print JSON")
    .action(async (ref: string, opts: { config: string; limit?: string; json?: boolean }) => {
      const { sessionsShowCommand } = await import("./sessions-show.js");
      process.exitCode = sessionsShowCommand(ref, opts);
    });
  sessions
    .command("compact <sessionKey> [instructions...]")
    .description("summarise a session now (asks the running daemon)")
    .option("-c, --config <path>", "config file (gateway address and token)", DEFAULT_CONFIG)
    .option("--url <url>", "gateway websocket URL (default from config)")
    .option("--token <token>", "gateway token (default: the running daemon's, then the config's)")
    .option("--json", "print JSON")
    .action(
      async (
        key: string,
        words: string[],
        opts: { config: string; url?: string; token?: string; json?: boolean },
      ) => {
        const { sessionsCompactCommand } = await import("./sessions.js");
        process.exitCode = await sessionsCompactCommand(key, words.join(" ") || undefined, opts);
      },
    );

  program
    .command("trace <requestId>")
    .description("show the call tree of one request: turns, model and tool calls, usage and cost")
    .option("-c, --config <path>", "config file (data_dir, pricing)", DEFAULT_CONFIG)
    .option("--url <url>", "ask a running gateway (http://host:port) instead of reading the database")
    .option("--token <token>", "gateway token with --url (default from config)")
    .option("--json", "print the report as JSON")
    .action(
      async (requestId: string, opts: { config: string; url?: string; token?: string; json?: boolean }) => {
        const { traceCommand } = await import("./trace.js");
        try {
          await traceCommand(requestId, opts);
        } catch (err) {
          process.stderr.write(`familiar trace: ${(err as Error).message}\n`);
          process.exitCode = 1;
        }
      },
    );

  registerCronCommands(program, DEFAULT_CONFIG);

  registerStoreCommands(program, DEFAULT_CONFIG);

  return program;
}
