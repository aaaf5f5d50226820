/**
 * Model markdown -> Telegram HTML: the exact output for each construct, escaping, and that whatever
 * the model writes comes out as HTML the Bot API accepts (checked by the fake server's validator).
 */
import { describe, expect, it } from "vitest";
import { telegramHtmlProblem } from "../../../test/fakes/telegram-server.js";
import { escapeHtml, markdownToTelegramHtml as html } from "./markdown-html.js";

describe("markdownToTelegramHtml", () => {
  it("renders bold, italics, strike, inline code and links", () => {
    expect(html("**bold** and *it* and _it2_ and ~~gone~~ and `x < y`")).toBe(
      "<b>bold</b> and <i>it</i> and <i>it2</i> and <s>gone</s> and <code>x &lt; y</code>",
    );
    expect(html("see [the docs](https://example.com/a?b=1&c=2) now")).toBe(
      'see <a href="https://example.com/a?b=1&amp;c=2">the docs</a> now',
    );
    expect(html("bare https://example.com/x link")).toBe(
      'bare <a href="https://example.com/x">https://example.com/x</a> link',
    );
  });

  it("keeps only safe link schemes", () => {
    expect(html("[click](javascript:alert(1))")).toBe("click");
    expect(html("[mail](mailto:a@b.c)")).toBe('<a href="mailto:a@b.c">mail</a>');
  });

  it("escapes text exactly once, including raw HTML from the model", () => {
    expect(html("a < b && c > d")).toBe("a &lt; b &amp;&amp; c &gt; d");
    expect(html("<script>alert(1)</script>")).toBe("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html("5 &lt; 6")).toBe("5 &lt; 6");
    expect(escapeHtml("<&>")).toBe("&lt;&amp;&gt;");
  });

  it("renders fenced code with its language, unescaped markdown inside stays literal", () => {
    const md = "Try:\n\n```ts\nconst a = x < 1 && **not bold**;\n```\n\nDone.";
    expect(html(md)).toBe(
      'Try:\n\n<pre><code class="language-ts">const a = x &lt; 1 &amp;&amp; **not bold**;</code></pre>\n\nDone.',
    );
    expect(html("```\nplain\n```")).toBe("<pre>plain</pre>");
    // A language that is not a plain word is dropped rather than put into an attribute.
    expect(html('```a"b\ncode\n```')).toBe("<pre>code</pre>");
  });

  it("renders headings, lists, nested lists, task lists and quotes readably", () => {
    expect(html("# Title\n\nText")).toBe("<b>Title</b>\n\nText");
    expect(html("- one\n- **two**\n  - nested")).toBe("• one\n• <b>two</b>\n  • nested");
    expect(html("3. c\n4. d")).toBe("3. c\n4. d");
    expect(html("- [x] done\n- [ ] todo")).toBe("• ☑ done\n• ☐ todo");
    expect(html("> quoted *text*")).toBe("<blockquote>quoted <i>text</i></blockquote>");
    expect(html("| a | b |\n|---|---|\n| 1 | 2 |")).toBe("<pre>| a | b |\n|---|---|\n| 1 | 2 |</pre>");
  });

  it("always produces HTML Telegram accepts", () => {
    const samples = [
      "**unclosed bold and `code",
      "*a **b* c**",
      "```py\nprint('<b>')\n",
      "[link](https://x.y/<>) and ![img](https://x.y/i.png)",
      "<b>model html</b> <i>mixed <u>tags</i></u>",
      "1. a\n   ```\n   code in list\n   ```\n2. b",
      "> quote\n> - list in quote\n> ```\n> code\n> ```",
      "a_b_c snake_case_word and 2*3*4",
      "&amp; &#39; &unknown; &",
      "# h1\n## h2 with `code` and **b**\n---\n",
    ];
    for (const md of samples) expect(telegramHtmlProblem(html(md)), md).toBeUndefined();
  });
});
