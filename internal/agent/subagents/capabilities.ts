/**
 * Capability routing (reference: MatchCapabilities, FormatCapabilities). Agents declare
 * `capabilities: [{name, tags, strength}]`; a task description is scored by keyword and tag overlap
 * weighted by strength.
 */
import type { AgentDef } from "../agents.js";

export interface MatchResult {
  agentId: string;
  score: number;
  matched: string[];
}

const STOP = new Set([
  "the",
  "a",
  "an",
  "and",
  "or",
  "to",
  "of",
  "in",
  "for",
  "on",
  "with",
  "please",
  "me",
  "my",
  "this",
  "that",
  "is",
  "it",
  "be",
]);

function words(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .split(/[^a-z0-9+#.]+/)
      .map((w) => w.replace(/^\.+|\.+$/g, ""))
      .filter((w) => w.length > 1 && !STOP.has(w)),
  );
}

/** Scores agents against a task, highest first; only scores > 0 are returned. */
export function matchCapabilities(agents: readonly AgentDef[], task: string): MatchResult[] {
  const taskWords = words(task);
  const out: MatchResult[] = [];
  for (const a of agents) {
    let score = 0;
    const matched: string[] = [];
    for (const cap of a.capabilities ?? []) {
      const strength = cap.strength ?? 0.5;
      const nameParts = cap.name.toLowerCase().split(/[-_\s]+/);
      const nameHits = nameParts.filter((p) => taskWords.has(p)).length;
      if (nameHits > 0) {
        score += strength * (nameHits / nameParts.length) * 2;
        matched.push(cap.name);
      }
      for (const tag of cap.tags ?? []) {
        if (taskWords.has(tag.toLowerCase())) {
          score += strength;
          matched.push(tag);
        }
      }
    }
    if (score > 0) out.push({ agentId: a.id, score: Math.round(score * 1000) / 1000, matched });
  }
  return out.sort((x, y) => y.score - x.score || x.agentId.localeCompare(y.agentId));
}

/** `code-generation [golang, python] (0.9), code-review [golang]` — strength omitted when 1. */
export function formatCapabilities(caps: AgentDef["capabilities"]): string {
  return (caps ?? [])
    .map((c) => {
      const tags = c.tags && c.tags.length > 0 ? ` [${c.tags.join(", ")}]` : "";
      const s = c.strength !== undefined && c.strength !== 1 ? ` (${c.strength})` : "";
      return `${c.name}${tags}${s}`;
    })
    .join(", ");
}
