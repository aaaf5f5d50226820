/**
 * The streaming spec's vocabulary (seed `agent-streaming-spec.txt`) as an opt-in of the `/api`
 * stream (`?vocabulary=chunks`); today's events stay the default. Every SSE event is `chunk` with
 * data `{"chunk-type", content, "end-of-message", "end-of-dialog"}`:
 *
 * - `thought`: the model's reasoning deltas;
 * - `action`: a tool call (content: the tool name; `name`, `arguments`, `call_id` beside it), one
 *   whole message each;
 * - `observation`: its result (content; `call_id`, `is_error`), one whole message each;
 * - `answer`: the reply's deltas; text a step wrote before calling tools is closed with an empty
 *   answer chunk with `end-of-message` (the next step's text is a new message);
 * - `explain`: provenance of the turn with inline triples (`explain_id` = `urn:familiar:request:<id>`,
 *   `explain_graph`, `explain_triples` in the spec's `{s, p, o}` term shape), just before the end;
 * - `error`: the failure's message, with `end-of-message` and `end-of-dialog`;
 * - notices (compaction, loop breaker) are `thought` messages of their own.
 *
 * The dialog ends with an empty `answer` chunk carrying `end-of-message` and `end-of-dialog` (plus
 * `finish_reason`, `session_id`, `usage`), or with the `error` chunk.
 */
import type { AgentEvent } from "../../core/agent-events.js";
import type { TurnResult } from "../../core/host.js";
import type { EventSink } from "./sse.js";
import { turnTotalsJson } from "./api-json.js";
import { apiError } from "./api-errors.js";

/**
 * The stream vocabulary a request asks for with `?vocabulary=` (`events`, the default, or `chunks`);
 * anything else is a 400 naming the parameter. Every `/api` stream that runs a turn reads it.
 */
export function streamVocabulary(url: URL): "events" | "chunks" {
  const vocabulary = url.searchParams.get("vocabulary") ?? "events";
  if (vocabulary !== "events" && vocabulary !== "chunks")
    throw apiError(
      400,
      "invalid_query",
      `vocabulary: expected events (default) or chunks, got "${vocabulary}"`,
      "vocabulary",
    );
  return vocabulary;
}

type ChunkType = "thought" | "action" | "observation" | "answer" | "explain" | "error";

function chunk(
  sink: EventSink,
  type: ChunkType,
  content: string,
  eom: boolean,
  eod: boolean,
  extra: Record<string, unknown> = {},
): void {
  sink.send("chunk", { "chunk-type": type, content, "end-of-message": eom, "end-of-dialog": eod, ...extra });
}

/**
 * Maps the turn's events to chunks (see the module comment); `close` ends an open thought or answer
 * message (before the explain chunk).
 */
export function chunkEventForwarder(sink: EventSink): {
  forward: (e: AgentEvent) => void;
  close: () => void;
} {
  let open: ChunkType | undefined;
  const close = (): void => {
    if (open === "thought" || open === "answer") chunk(sink, open, "", true, false);
    open = undefined;
  };
  const forward = (e: AgentEvent): void => {
    switch (e.type) {
      case "thinking_delta":
        if (!e.delta) return;
        if (open !== "thought") close();
        open = "thought";
        chunk(sink, "thought", e.delta, false, false);
        return;
      case "text_delta":
        if (!e.delta) return;
        if (open !== "answer") close();
        open = "answer";
        chunk(sink, "answer", e.delta, false, false);
        return;
      case "iteration_text":
        close();
        return;
      case "tool_start":
        close();
        chunk(sink, "action", e.name, true, false, {
          name: e.name,
          arguments: e.args,
          call_id: e.callId,
        });
        return;
      case "tool_end":
        chunk(sink, "observation", e.result, true, false, { call_id: e.callId, is_error: e.isError });
        return;
      case "notice":
        close();
        chunk(sink, "thought", e.text, true, false, { notice: e.kind });
        return;
      default:
        return;
    }
  };
  return { forward, close };
}

const RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const NS = "https://familiar.dev/ns/";
const iri = (i: string) => ({ t: "i", i });
const lit = (v: string | number) => ({ t: "l", v: String(v) });

/** The turn's provenance chunk, then the end of the dialog (or the error chunk). */
export function chunkFinish(
  sink: EventSink,
  r: TurnResult,
  t: { agentId: string; question: string },
  failure?: { code: string; message: string },
): void {
  const id = `urn:familiar:request:${r.requestId}`;
  const triples = [
    { s: iri(id), p: iri(RDF_TYPE), o: iri(`${NS}AgentSession`) },
    { s: iri(id), p: iri(`${NS}query`), o: lit(t.question) },
    { s: iri(id), p: iri(`${NS}agent`), o: lit(t.agentId) },
    { s: iri(id), p: iri(`${NS}session`), o: iri(`urn:familiar:session:${r.sessionId}`) },
    ...(r.model ? [{ s: iri(id), p: iri(`${NS}model`), o: lit(r.model) }] : []),
    { s: iri(id), p: iri(`${NS}finishReason`), o: lit(r.finishReason) },
    { s: iri(id), p: iri(`${NS}inputTokens`), o: lit(r.treeUsage.input) },
    { s: iri(id), p: iri(`${NS}outputTokens`), o: lit(r.treeUsage.output) },
    { s: iri(id), p: iri(`${NS}subCalls`), o: lit(r.subCalls) },
  ];
  chunk(sink, "explain", "", true, false, {
    explain_id: id,
    explain_graph: "urn:familiar:graph:provenance",
    explain_triples: triples,
  });
  const totals = { session_id: r.sessionId, ...turnTotalsJson(r) };
  if (failure)
    chunk(sink, "error", failure.message, true, true, { error: { code: failure.code }, ...totals });
  else chunk(sink, "answer", "", true, true, { finish_reason: r.finishReason, ...totals });
}
