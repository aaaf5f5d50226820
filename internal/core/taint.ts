/**
 * Taint: where untrusted text entered a conversation. A session whose model context holds text the
 * owner did not write (a fetched page, a chat document, a group member's message...) is tainted, and
 * while it is, whatever sends data out asks the owner first (see docs/security.md, "Prompt-injection
 * containment"). These are the contract types every door and tool uses to say so.
 */

/** What kind of untrusted input tainted a session. */
export type TaintKind =
  | "web_fetch"
  | "document"
  | "image"
  | "transcript"
  | "non_owner_sender"
  | "webhook"
  | "mcp_tool"
  | "inbox_file"
  | "tainted_memory"
  | "tainted_data"
  | "tainted_subagent"
  | "exec_network"
  | "inherited";

/** One source of taint as a door or tool reports it. */
export interface TaintInput {
  kind: TaintKind;
  /** The URL, sender, tool or path it came from, shown to the owner. */
  detail: string;
}

/** A recorded source: the input plus when it entered. */
export interface TaintSource extends TaintInput {
  /** Epoch ms. */
  at: number;
}

/** Every kind, for validation of stored rows. */
export const TAINT_KINDS: readonly TaintKind[] = [
  "web_fetch",
  "document",
  "image",
  "transcript",
  "non_owner_sender",
  "webhook",
  "mcp_tool",
  "inbox_file",
  "tainted_memory",
  "tainted_data",
  "tainted_subagent",
  "exec_network",
  "inherited",
];

/** Short human words for a kind ("read", "was sent a document"...), used in approval questions. */
export function describeTaint(s: TaintInput): string {
  switch (s.kind) {
    case "web_fetch":
      return `read ${s.detail}`;
    case "document":
      return `was sent the document ${s.detail}`;
    case "image":
      return `was sent an image (${s.detail})`;
    case "transcript":
      return `was sent a voice message (${s.detail})`;
    case "non_owner_sender":
      return `received a message from ${s.detail}, who is not the owner`;
    case "webhook":
      return `received the webhook ${s.detail}`;
    case "mcp_tool":
      return `read the result of the untrusted MCP tool ${s.detail}`;
    case "inbox_file":
      return `read the inbox file ${s.detail}`;
    case "tainted_memory":
      return `read memory written by a tainted conversation (${s.detail})`;
    case "tainted_data":
      return `read data written by a tainted conversation (${s.detail})`;
    case "tainted_subagent":
      return `got the answer of a tainted subagent (${s.detail})`;
    case "exec_network":
      return `ran a command with network access (${s.detail})`;
    case "inherited":
      return `was started by a tainted conversation (${s.detail})`;
  }
}
