/**
 * Model markdown -> Telegram HTML (the small tag set the Bot API accepts: b, i, s, u, code, pre,
 * a, blockquote). Built on `marked`'s lexer so the markdown is parsed, not pattern-matched.
 *
 * Invariants: every piece of text is HTML-escaped exactly once; only Telegram's tags are produced and
 * always balanced; links keep only http(s), tg and mailto URLs (others become plain text); anything
 * Telegram cannot show (tables, raw HTML, images) degrades to readable text.
 */
import { Lexer, type Token, type Tokens } from "marked";

/** Escapes text for Telegram HTML. */
export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function escapeAttr(s: string): string {
  return escapeHtml(s).replace(/"/g, "&quot;");
}

/** marked hands some text back entity-encoded; decode before our own escaping. */
function decodeEntities(s: string): string {
  return s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");
}

const SAFE_URL = /^(https?:|tg:|mailto:)/i;

/** Converts markdown to Telegram HTML. */
export function markdownToTelegramHtml(md: string): string {
  const tokens = new Lexer({ gfm: true, breaks: false }).lex(md);
  return blocks(tokens, 0)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function blocks(tokens: Token[], depth: number): string {
  const out: string[] = [];
  for (const t of tokens) {
    const s = block(t, depth);
    if (s !== undefined) out.push(s);
  }
  return out.join("\n\n");
}

function block(t: Token, depth: number): string | undefined {
  switch (t.type) {
    case "space":
      return undefined;
    case "paragraph":
      return inline((t as Tokens.Paragraph).tokens);
    case "heading":
      return `<b>${inline((t as Tokens.Heading).tokens)}</b>`;
    case "code": {
      const c = t as Tokens.Code;
      const lang = (c.lang ?? "").trim().split(/\s+/)[0] ?? "";
      const body = escapeHtml(c.text);
      return lang && /^[\w+#.-]+$/.test(lang)
        ? `<pre><code class="language-${escapeAttr(lang)}">${body}</code></pre>`
        : `<pre>${body}</pre>`;
    }
    case "blockquote":
      return `<blockquote>${blocks((t as Tokens.Blockquote).tokens, depth)}</blockquote>`;
    case "list":
      return list(t as Tokens.List, depth);
    case "hr":
      return "——————";
    case "table":
      return `<pre>${escapeHtml(t.raw.trim())}</pre>`;
    case "html":
      return escapeHtml((t as Tokens.HTML).text.trim());
    case "text": {
      const tt = t as Tokens.Text;
      return tt.tokens ? inline(tt.tokens) : escapeHtml(decodeEntities(tt.text));
    }
    case "def":
      return undefined;
    default:
      return escapeHtml(t.raw);
  }
}

function list(l: Tokens.List, depth: number): string {
  const indent = "  ".repeat(depth);
  const start = typeof l.start === "number" ? l.start : 1;
  return l.items
    .map((item, i) => {
      const bullet = l.ordered ? `${start + i}.` : "•";
      const check = item.task ? (item.checked ? "☑ " : "☐ ") : "";
      const parts: string[] = [];
      for (const t of item.tokens) {
        if (t.type === "checkbox") continue;
        if (t.type === "list") parts.push(`\n${list(t as Tokens.List, depth + 1)}`);
        else {
          const s = block(t, depth + 1);
          if (s !== undefined) parts.push(parts.length > 0 ? `\n${indent}  ${s}` : s);
        }
      }
      return `${indent}${bullet} ${check}${parts.join("")}`;
    })
    .join("\n");
}

function inline(tokens: Token[] | undefined): string {
  if (!tokens) return "";
  let out = "";
  for (const t of tokens) {
    switch (t.type) {
      case "text": {
        const tt = t as Tokens.Text;
        out += tt.tokens ? inline(tt.tokens) : escapeHtml(decodeEntities(tt.text));
        break;
      }
      case "escape":
        out += escapeHtml(decodeEntities((t as Tokens.Escape).text));
        break;
      case "strong":
        out += `<b>${inline((t as Tokens.Strong).tokens)}</b>`;
        break;
      case "em":
        out += `<i>${inline((t as Tokens.Em).tokens)}</i>`;
        break;
      case "del":
        out += `<s>${inline((t as Tokens.Del).tokens)}</s>`;
        break;
      case "codespan":
        out += `<code>${escapeHtml(decodeEntities((t as Tokens.Codespan).text))}</code>`;
        break;
      case "br":
        out += "\n";
        break;
      case "link": {
        const l = t as Tokens.Link;
        const label = inline(l.tokens) || escapeHtml(l.href);
        out += SAFE_URL.test(l.href) ? `<a href="${escapeAttr(l.href)}">${label}</a>` : label;
        break;
      }
      case "image": {
        const im = t as Tokens.Image;
        out += SAFE_URL.test(im.href)
          ? `<a href="${escapeAttr(im.href)}">${escapeHtml(im.text || "image")}</a>`
          : escapeHtml(im.text);
        break;
      }
      case "html":
        out += escapeHtml((t as Tokens.HTML).text);
        break;
      default:
        out += escapeHtml(t.raw);
    }
  }
  return out;
}
