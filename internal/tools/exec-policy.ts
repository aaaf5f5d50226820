/**
 * Exec policy: does a shell command match `tools.exec.allowlist`, and must the owner be asked?
 *
 * Invariant: a command is allow-listed only when EVERY segment of it (split on `;`, `&&`, `||`, `|`,
 * `&`, newlines) matches a pattern, and it contains no command substitution (`$(...)`, backticks,
 * `<(...)`), redirection, variable expansion (`$VAR`, `${...}`: `echo $OPENAI_API_KEY`) or argument
 * that leaves the workspace (an absolute path, `~`, or a `..` segment: `cat ~/.ssh/id_rsa`). So
 * `echo hi; rm -rf ~` does not ride on the `echo *` pattern, and `cat *` stays inside the workspace
 * like the file tools; such commands are a miss and go to the owner (`ask: on-miss`).
 * Backslashes, quotes, `$`, backticks, `~` and braces are refused outright: a policy that parses shell
 * text loses to the shell, so the allow list is a convenience for the unsandboxed mode, not a boundary.
 */

/** `allow` = run now; `ask` = ask the owner first; `deny` = refuse (with the reason). */
export type ExecVerdict =
  { action: "allow" } | { action: "ask"; reason: string } | { action: "deny"; reason: string };

export interface ExecPolicy {
  security: "deny" | "allowlist" | "full";
  ask: "off" | "on-miss" | "always";
  allowlist: readonly string[];
}

/** Splits a command into its simple-command segments; `unsafe` is set for substitutions/redirections. */
export function splitCommand(cmd: string): { segments: string[]; unsafe: string | undefined } {
  const segments: string[] = [];
  let cur = "";
  let quote: "'" | '"' | undefined;
  let unsafe: string | undefined;
  for (let i = 0; i < cmd.length; i++) {
    const c = cmd[i] as string;
    const next = cmd[i + 1];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (quote === '"' && c === "\\") {
        cur += c + (next ?? "");
        i++;
        continue;
      } else if (quote === '"' && (c === "`" || (c === "$" && next === "(")))
        unsafe ??= "command substitution";
      else if (quote === '"' && c === "$" && next !== undefined && /[A-Za-z_{]/.test(next))
        unsafe ??= "variable expansion";
      cur += c;
      continue;
    }
    if (c === "\\") {
      cur += c + (next ?? "");
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      cur += c;
      continue;
    }
    if (c === "`" || (c === "$" && next === "(")) unsafe ??= "command substitution";
    if (c === "$" && next !== undefined && /[A-Za-z_{]/.test(next)) unsafe ??= "variable expansion";
    if ((c === "<" || c === ">") && next === "(") unsafe ??= "process substitution";
    else if (c === "<" || c === ">") unsafe ??= "redirection";
    if (c === ";" || c === "&" || c === "|" || c === "\n") {
      if (cur.trim()) segments.push(cur.trim());
      cur = "";
      if ((c === "&" || c === "|") && next === c) i++;
      continue;
    }
    cur += c;
  }
  if (quote) unsafe ??= "unbalanced quotes";
  if (cur.trim()) segments.push(cur.trim());
  return { segments, unsafe };
}

function patternToRegExp(pattern: string): RegExp {
  let p = pattern.trim().replace(/\s+/g, " ");
  // `ls *` also allows a bare `ls`.
  const optionalArgs = p.endsWith(" *");
  if (optionalArgs) p = p.slice(0, -2);
  const body = p
    .split("*")
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp("^" + body + (optionalArgs ? "( .*)?" : "") + "$", "s");
}

/**
 * True when an argument of the segment points outside the workspace: starts with `/` or `~` (also
 * after `--opt=`), or has a `..` path segment. Quotes are removed first; a crude word split is enough
 * because a false positive only means the owner is asked.
 */
export function leavesWorkspace(segment: string): boolean {
  const words = segment.replace(/["']/g, "").split(/\s+/).slice(1);
  return words.some((w) => {
    const values = [w, ...(w.includes("=") ? [w.slice(w.indexOf("=") + 1)] : [])];
    return values.some((v) => v.startsWith("/") || v.startsWith("~") || /(^|\/)\.\.(\/|$)/.test(v));
  });
}

/** The argument words of every segment (quotes removed, `--opt=value` also as `value`). */
export function argumentWords(cmd: string): string[] {
  return splitCommand(cmd).segments.flatMap((seg) =>
    seg
      .replace(/["']/g, "")
      .split(/\s+/)
      .slice(1)
      .flatMap((w) => (w.includes("=") ? [w, w.slice(w.indexOf("=") + 1)] : [w])),
  );
}

/**
 * Characters whose meaning the shell decides, not this check: a backslash (`cat \/etc/hostname` reads
 * `/etc/hostname`, `.\./x` is `../x`), quotes, `$` in any form, backticks, `~` and braces. A command
 * holding one is never allow-listed; it goes to the owner.
 */
const UNJUDGED = /[\\'"`$~{}]/;

/** True when the whole command is covered by the allow list (see the module invariant). */
export function matchesAllowlist(cmd: string, allowlist: readonly string[]): boolean {
  if (UNJUDGED.test(cmd)) return false;
  const { segments, unsafe } = splitCommand(cmd);
  if (unsafe || segments.length === 0) return false;
  if (segments.some(leavesWorkspace)) return false;
  const res = allowlist.map(patternToRegExp);
  return segments.every((s) => {
    const norm = s.replace(/\s+/g, " ");
    return res.some((r) => r.test(norm));
  });
}

/** Decides what to do with a command under the policy. */
export function evaluateExec(cmd: string, p: ExecPolicy): ExecVerdict {
  if (p.security === "deny")
    return { action: "deny", reason: "exec is disabled (tools.exec.security: deny)" };
  if (p.ask === "always")
    return { action: "ask", reason: "every command needs approval (tools.exec.ask: always)" };
  if (p.security === "full") return { action: "allow" };
  if (matchesAllowlist(cmd, p.allowlist)) return { action: "allow" };
  if (p.ask === "off")
    return {
      action: "deny",
      reason: "the command is not in tools.exec.allowlist and approvals are off (tools.exec.ask: off)",
    };
  return { action: "ask", reason: "the command is not in tools.exec.allowlist" };
}
