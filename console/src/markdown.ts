/**
 * The web chat's safe markdown renderer (internal/gateway/web/index.html, `md`), typed for the
 * console: escape everything first, then turn a small subset back into tags (paragraphs, headings,
 * lists, code, bold, italic, strike, links to http(s) and mailto only). Because the input is escaped
 * before any tag is made, no text from a transcript can become markup the renderer did not write.
 * test/gateway/console-markdown.test.ts runs both copies on the same inputs and requires equal output.
 */
const esc = (s: string): string =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

function inline(src: string): string {
  const codes: string[] = [];
  let s = src.replace(
    /`([^`\n]+)`/g,
    (_, c: string) => (codes.push("<code>" + c + "</code>"), "\u0000" + (codes.length - 1) + "\u0000"),
  );
  s = s.replace(
    /\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/g,
    (_, t: string, u: string) =>
      '<a href="' + u + '" target="_blank" rel="noopener noreferrer">' + t + "</a>",
  );
  s = s
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[\s(])\*([^*\n]+)\*(?=[\s).,!?:;]|$)/g, "$1<em>$2</em>");
  s = s.replace(/~~([^~\n]+)~~/g, "<del>$1</del>");
  // eslint-disable-next-line no-control-regex -- the placeholders are control characters on purpose
  return s.replace(/\u0000(\d+)\u0000/g, (_, i: string) => codes[+i] ?? "");
}

/** Markdown to safe HTML (see the module comment for the subset). */
export function md(src: string): string {
  const blocks: string[] = [];
  const s = esc(src).replace(
    /```[^\n]*\n([\s\S]*?)(?:```|$)/g,
    (_, c: string) => (
      blocks.push("<pre><code>" + c.replace(/\n$/, "") + "</code></pre>"),
      "\n\u0001" + (blocks.length - 1) + "\u0001\n"
    ),
  );
  const out: string[] = [];
  let list: { t: "ul" | "ol"; items: string[] } | null = null;
  let para: string[] = [];
  const flushPara = (): void => {
    if (para.length) {
      out.push("<p>" + para.map(inline).join("<br>") + "</p>");
      para = [];
    }
  };
  const flushList = (): void => {
    if (list) {
      out.push(
        "<" +
          list.t +
          ">" +
          list.items.map((i) => "<li>" + inline(i) + "</li>").join("") +
          "</" +
          list.t +
          ">",
      );
      list = null;
    }
  };
  for (const line of s.split("\n")) {
    let m: RegExpExecArray | null;
    // eslint-disable-next-line no-control-regex -- the placeholders are control characters on purpose
    if ((m = /^\u0001(\d+)\u0001$/.exec(line))) {
      flushPara();
      flushList();
      out.push(blocks[+m[1]!] ?? "");
    } else if ((m = /^(#{1,3})\s+(.*)$/.exec(line))) {
      flushPara();
      flushList();
      out.push("<h" + m[1]!.length + ">" + inline(m[2]!) + "</h" + m[1]!.length + ">");
    } else if ((m = /^\s*[-*+]\s+(.*)$/.exec(line))) {
      flushPara();
      if (!list || list.t !== "ul") {
        flushList();
        list = { t: "ul", items: [] };
      }
      list.items.push(m[1]!);
    } else if ((m = /^\s*\d+[.)]\s+(.*)$/.exec(line))) {
      flushPara();
      if (!list || list.t !== "ol") {
        flushList();
        list = { t: "ol", items: [] };
      }
      list.items.push(m[1]!);
    } else if (!line.trim()) {
      flushPara();
      flushList();
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return out.join("");
}
