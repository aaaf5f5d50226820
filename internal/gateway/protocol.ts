/**
 * Websocket frame types and parsing (see docs/gateway-protocol.md). Shared by the server and the
 * client (`client.ts`), so it must stay dependency-free.
 */

/** Bumped on any incompatible change of frames, methods or events. */
export const PROTOCOL_VERSION = 1;

export type FrameId = string | number;

export interface ReqFrame {
  type: "req";
  id: FrameId;
  method: string;
  params?: unknown;
}

export interface ErrorBody {
  code: string;
  message: string;
}

export type ResFrame =
  | { type: "res"; id: FrameId; ok: true; payload: unknown }
  | { type: "res"; id: FrameId | null; ok: false; error: ErrorBody };

export interface EventFrame {
  type: "event";
  event: string;
  payload: unknown;
  seq: number;
}

export type Frame = ReqFrame | ResFrame | EventFrame;

/** Error codes answered in `res.error.code`. */
export type MethodErrorCode =
  | "invalid_json"
  | "invalid_frame"
  | "unknown_method"
  | "invalid_params"
  | "unavailable"
  | "not_found"
  | "forbidden"
  | "conflict"
  | "unauthorized"
  | "invalid_config"
  | "internal";

/** Thrown by method handlers; becomes an error response. */
export class MethodError extends Error {
  constructor(
    readonly code: MethodErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "MethodError";
  }
}

/** Parses one inbound text frame into a request, or an error response to send back. */
export function parseRequest(text: string): { ok: true; frame: ReqFrame } | { ok: false; res: ResFrame } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return errRes(null, "invalid_json", `frame is not valid JSON: ${(err as Error).message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v))
    return errRes(null, "invalid_frame", "frame must be a JSON object");
  const o = v as Record<string, unknown>;
  const id = typeof o.id === "string" || typeof o.id === "number" ? o.id : null;
  if (o.type !== "req")
    return errRes(id, "invalid_frame", 'expected a request frame {type:"req", id, method, params}');
  if (id === null) return errRes(null, "invalid_frame", "request frame needs an id (string or number)");
  if (typeof o.method !== "string" || o.method === "")
    return errRes(id, "invalid_frame", "request frame needs a method name");
  return { ok: true, frame: { type: "req", id, method: o.method, params: o.params } };
}

function errRes(id: FrameId | null, code: MethodErrorCode, message: string): { ok: false; res: ResFrame } {
  return { ok: false, res: { type: "res", id, ok: false, error: { code, message } } };
}

/** Typed access to a method's params; every getter throws `invalid_params` naming the field. */
export class Params {
  readonly o: Record<string, unknown>;
  constructor(params: unknown) {
    if (params === undefined || params === null) this.o = {};
    else if (typeof params === "object" && !Array.isArray(params)) this.o = params as Record<string, unknown>;
    else throw new MethodError("invalid_params", "params must be an object");
  }
  str(name: string): string {
    const v = this.o[name];
    if (typeof v !== "string" || v === "")
      throw new MethodError("invalid_params", `params.${name}: expected a non-empty string`);
    return v;
  }
  optStr(name: string): string | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw new MethodError("invalid_params", `params.${name}: expected a string`);
    return v;
  }
  optInt(name: string, min: number, max: number): number | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
      throw new MethodError("invalid_params", `params.${name}: expected an integer ${min}-${max}`);
    return v;
  }
  optBool(name: string): boolean | undefined {
    const v = this.o[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean")
      throw new MethodError("invalid_params", `params.${name}: expected true or false`);
    return v;
  }
}
