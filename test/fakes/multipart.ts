/** Multipart bodies in the fakes (grammY and discord.js uploads). */

/** A minimal multipart/form-data parser (grammY's bodies, which undici's FormData refuses; discord.js uploads). */
export function parseMultipart(
  body: Buffer,
  contentType: string,
): { name: string; filename?: string; type?: string; data: Buffer }[] {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return [];
  const sep = Buffer.from(`--${boundary}`);
  const parts: { name: string; filename?: string; type?: string; data: Buffer }[] = [];
  let at = body.indexOf(sep);
  while (at >= 0) {
    const start = at + sep.length;
    const next = body.indexOf(sep, start);
    if (next < 0) break;
    const chunk = body.subarray(start, next);
    const headEnd = chunk.indexOf("\r\n\r\n");
    if (headEnd >= 0) {
      const head = chunk.subarray(0, headEnd).toString("utf8");
      let data = chunk.subarray(headEnd + 4);
      if (data.subarray(-2).toString() === "\r\n") data = data.subarray(0, -2);
      const name = /[;\s]name="?([^";\r\n]*)"?/.exec(head)?.[1];
      // grammY leaves the file name unquoted (`filename=a.png`).
      const filename = /filename="?([^";\r\n]*)"?/.exec(head)?.[1];
      const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1];
      if (name !== undefined)
        parts.push({
          name,
          ...(filename !== undefined ? { filename } : {}),
          ...(type ? { type } : {}),
          data: Buffer.from(data),
        });
    }
    at = next;
  }
  return parts;
}
