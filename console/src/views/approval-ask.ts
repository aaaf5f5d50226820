/**
 * What an approval asks, as a heading a person reads ("Run this command?", "Write notes/plan.md?",
 * "Keep the files a command created?") instead of its kind (`exec`, `file`, `planted`). The kinds
 * and their summaries are the tools' own (exec-tool.ts, fs-tools.ts, plant-guard.ts); an unknown kind
 * is headed by its summary's first line.
 */
export function approvalAsk(kind: string, summary: string): string {
  const first = summary.split("\n")[0]!.trim();
  if (kind === "exec") return "Run this command?";
  if (kind === "file") {
    // "<tool> <path>": the file tool and the workspace path it would write.
    const path = /^\S+\s+(.+)$/.exec(first)?.[1];
    return path ? `Write ${path}?` : "Write a file?";
  }
  if (kind === "planted") return "Keep the files a command created?";
  return first.length > 90 ? `${first.slice(0, 89)}…` : first || `Allow ${kind}?`;
}
