/**
 * Wire-level helpers of the websocket gateway (ws-server.ts): decoding frames, sending responses,
 * bounding close reasons, and refusing an HTTP upgrade before any websocket exists.
 */
import type { Duplex } from "node:stream";
import type { WebSocket, RawData } from "ws";
import type { HttpError } from "./http-util.js";
import type { ResFrame } from "./protocol.js";

/** The text of a websocket message, whatever buffer shape ws delivered it in. */
export function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

/** Sends a response frame when the socket is still open (a closed socket drops it silently). */
export function sendFrame(ws: WebSocket, frame: ResFrame): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
}

/** Close reasons are limited to 123 bytes by the websocket spec. */
export function truncateReason(s: string): string {
  return Buffer.byteLength(s) <= 123 ? s : Buffer.from(s).subarray(0, 120).toString("utf8") + "...";
}

/** Answers a refused upgrade with a plain HTTP error (JSON body, extra headers such as retry-after) and closes. */
export function rejectUpgrade(
  socket: Duplex,
  status: number,
  text: string,
  message: string,
  err?: HttpError,
): void {
  const body = JSON.stringify({ error: { code: err?.code ?? "not_found", message } });
  const extra = Object.entries(err?.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`,
  );
}
