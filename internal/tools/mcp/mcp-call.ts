/**
 * One MCP tool call with Familiar's time limits (issue 46 item 5): a progress token is always sent, so
 * a long tool that reports progress is not cut while it keeps reporting.
 *
 * Invariants:
 * - the call fails with `MCP_TIMEOUT` when the server has been silent (no result, no progress) for
 *   `idleMs`, or when `maxTotalMs` has passed since the call began, progress or not;
 * - both limits run on the injected clock (the SDK's own timer is set out of the way), so tests move
 *   time instead of waiting for it;
 * - a timeout or the caller's abort cancels the request through the SDK, which tells the server
 *   (`notifications/cancelled`).
 */
import type { Clock, TimerHandle } from "../../core/clock.js";
import { ToolError } from "../tool.js";

type SdkClient = import("@modelcontextprotocol/sdk/client/index.js").Client;

/** How long a call may take. */
export interface McpCallLimits {
  /** Longest silence (no progress, no result) before the call is cut. */
  idleMs: number;
  /** Longest call in all, however much progress it reports. */
  maxTotalMs: number;
}

/** Default limits: 120 s of silence, 30 min in all. */
export const DEFAULT_MCP_CALL_LIMITS: McpCallLimits = { idleMs: 120_000, maxTotalMs: 30 * 60_000 };

/** The SDK's own timeout, kept beyond ours (it runs on the real clock): setTimeout's largest delay. */
const SDK_TIMEOUT_MS = 2_147_483_647;

/** Calls `tool` on `client` under `limits`; `onProgress` sees each progress notification. */
export async function callToolWithProgress(
  client: SdkClient,
  call: { server: string; tool: string; args: Record<string, unknown> },
  signal: AbortSignal,
  clock: Clock,
  limits: McpCallLimits,
  onProgress?: (p: { progress: number; total?: number; message?: string }) => void,
): Promise<unknown> {
  const ac = new AbortController();
  const startedAt = clock.now();
  let timer: TimerHandle | undefined;
  const cut = (why: string): void =>
    ac.abort(
      new ToolError(
        "MCP_TIMEOUT",
        `MCP tool ${call.tool} on server "${call.server}" ${why}; the call was cancelled`,
      ),
    );
  const arm = (): void => {
    if (timer) clock.clearTimeout(timer);
    const left = limits.maxTotalMs - (clock.now() - startedAt);
    if (left <= 0) return cut(`ran past its limit of ${Math.round(limits.maxTotalMs / 1000)} s`);
    const silent = left > limits.idleMs;
    timer = clock.setTimeout(
      () =>
        silent
          ? cut(`sent nothing (no result, no progress) for ${Math.round(limits.idleMs / 1000)} s`)
          : cut(`ran past its limit of ${Math.round(limits.maxTotalMs / 1000)} s`),
      Math.min(left, limits.idleMs),
    );
    timer.unref?.();
  };
  const onAbort = (): void => ac.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  arm();
  try {
    return await client.callTool({ name: call.tool, arguments: call.args }, undefined, {
      signal: ac.signal,
      timeout: SDK_TIMEOUT_MS,
      // With `onprogress` the SDK puts a progressToken in the request's _meta.
      onprogress: (p) => {
        arm();
        onProgress?.(p);
      },
    });
  } catch (err) {
    // The SDK wraps an abort's reason in an McpError ("MCP error -32001: ToolError: ..."): give
    // back the reason itself, our timeout or the caller's abort.
    if (ac.signal.aborted && ac.signal.reason instanceof Error) throw ac.signal.reason;
    throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
    if (timer) clock.clearTimeout(timer);
  }
}
