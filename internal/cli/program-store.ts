/**
 * Commands over what the daemon keeps (commander): the memory index and what tainted conversations
 * wrote, pairing approvals, and imports from another program. Each action lazy-imports its
 * implementation. Split from program.ts, the table of every other command.
 */
import type { Command } from "commander";

/** Adds `memory`, `pairing` and `import` to the program. */
export function registerStoreCommands(program: Command, defaultConfig: string): void {
  const memory = program.command("memory").description("the memory index: status and reindex");
  type MemoryOpts = { config: string; url?: string; token?: string; json?: boolean };
  const memoryOpts = (c: Command): Command =>
    c
      .option("-c, --config <path>", "config file (gateway address and token)", defaultConfig)
      .option("--url <url>", "gateway websocket URL (default from config)")
      .option("--token <token>", "gateway token (default from config)")
      .option("--json", "print JSON");
  memoryOpts(
    memory.command("status").description("files, chunks, vectors, embedding model and reindex progress"),
  ).action(async (opts: MemoryOpts) => {
    const { memoryStatusCommand } = await import("./memory.js");
    await memoryStatusCommand(opts);
  });
  memoryOpts(
    memory
      .command("reindex")
      .description("re-read every memory file and re-embed every chunk in the background"),
  ).action(async (opts: MemoryOpts) => {
    const { memoryReindexCommand } = await import("./memory.js");
    await memoryReindexCommand(opts);
  });

  memory
    .command("tainted [action] [ids...]")
    .description(
      "what conversations that had read untrusted text wrote: list (entries and labelled files and jobs), purge (all, or the given ids) from the memory files, or clear <path|job:id> to vouch for it",
    )
    .option("-c, --config <path>", "config file", defaultConfig)
    .option("--all", "list purged entries too")
    .option("--json", "print JSON")
    .action(
      async (
        action: string | undefined,
        ids: string[],
        opts: { config: string; all?: boolean; json?: boolean },
      ) => {
        const { memoryTaintedCommand } = await import("./memory-tainted.js");
        process.exitCode = await memoryTaintedCommand(action ?? "list", ids, opts);
      },
    );

  const pairing = program
    .command("pairing")
    .description("approve chat users who asked for access (pairing codes)");
  pairing
    .command("list")
    .description("list pending pairing requests and approved users")
    .option("-c, --config <path>", "config file", defaultConfig)
    .option("--channel <id>", "only this channel (telegram, discord)")
    .option("--json", "print JSON")
    .action(async (opts: { config: string; channel?: string; json?: boolean }) => {
      const { pairingList } = await import("./pairing.js");
      await pairingList(opts);
    });
  pairing
    .command("approve <code>")
    .description("approve a pairing code: the user joins the stored allow list")
    .option("-c, --config <path>", "config file", defaultConfig)
    .option("--channel <id>", "only match a code of this channel")
    .action(async (code: string, opts: { config: string; channel?: string }) => {
      const { pairingApprove } = await import("./pairing.js");
      await pairingApprove(code, opts);
    });
  pairing
    .command("revoke <userId>")
    .description("remove an approved user")
    .requiredOption("--channel <id>", "channel of the user (telegram, discord)")
    .option("-c, --config <path>", "config file", defaultConfig)
    .action(async (userId: string, opts: { config: string; channel: string }) => {
      const { pairingRevoke } = await import("./pairing.js");
      await pairingRevoke(userId, opts);
    });

  program
    .command("import")
    .description("bring an assistant over from another program")
    .command("openclaw")
    .description(
      "import an OpenClaw state dir (default $OPENCLAW_STATE_DIR or ~/.openclaw): workspace files, notes, skills, cron, heartbeat, channels, models, conversations",
    )
    .option("--from <dir>", "the OpenClaw state directory (read only, never changed)")
    .option("--into <dir>", "the Familiar instance directory (made as `familiar init` does when new)")
    .option("-c, --config <path>", "config file to import into when --into is not given", defaultConfig)
    .option("--dry-run", "print what would be imported and what cannot be, item by item; write nothing")
    .option(
      "--accept <keys>",
      "take these items that grant power or would be held (keys from the report, comma-separated)",
    )
    .option("--accept-all-risky", "take every item that would otherwise need your confirmation")
    .action(
      async (opts: {
        from?: string;
        into?: string;
        config: string;
        dryRun?: boolean;
        accept?: string;
        acceptAllRisky?: boolean;
      }) => {
        const { importOpenClawAsking } = await import("./import.js");
        process.exitCode = await importOpenClawAsking(opts);
      },
    );
}
