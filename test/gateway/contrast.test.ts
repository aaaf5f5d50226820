/**
 * WCAG AA contrast, computed from the CSS as shipped: the design tokens (console/src/tokens.css, light
 * and dark) and the rules of the web chat and the console that put text on a coloured background.
 * Each rule's `color` and `background` are resolved through `var(--…)` to the tokens of the scheme, so
 * a literal colour that ignores the theme (the web chat's Send and New chat were `#fff` on the dark
 * accent: 2.47:1) fails here.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../helpers/daemon.js";

const read = (...p: string[]): string => readFileSync(join(REPO_ROOT, ...p), "utf8");
const TOKENS = read("console", "src", "tokens.css");
const CHAT = read("internal", "gateway", "web", "index.html");
const CONSOLE = read("console", "src", "styles.css");

type Vars = Map<string, string>;

/** The declarations `--name: value` of a CSS block's body. */
function declarations(body: string, into: Vars = new Map()): Vars {
  for (const m of body.matchAll(/(--[\w-]+)\s*:\s*([^;]+);/g)) into.set(m[1]!, m[2]!.trim());
  return into;
}

/** The body of the first `selector { … }` block (no nesting inside it) at or after `from`. */
function block(css: string, selector: string, from = 0): string {
  const at = css.indexOf(`${selector} {`, from);
  if (at < 0) throw new Error(`no rule "${selector}"`);
  const open = css.indexOf("{", at);
  return css.slice(open + 1, css.indexOf("}", open));
}

/** The custom properties in force for a scheme: the token block, dark overrides, then `extra` blocks. */
function vars(scheme: "light" | "dark", extra: string[] = []): Vars {
  const v = declarations(block(TOKENS, ":root"));
  if (scheme === "dark") {
    const dark = TOKENS.indexOf("@media (prefers-color-scheme: dark)");
    declarations(block(TOKENS, ":root", dark), v);
  }
  for (const e of extra) declarations(e, v);
  return v;
}

/** A value with every `var(--x)` replaced by its definition, down to a literal. */
function resolve(value: string, v: Vars, depth = 0): string {
  if (depth > 10) throw new Error(`var() cycle at ${value}`);
  const m = /var\((--[\w-]+)\)/.exec(value);
  if (!m) return value.trim();
  const def = v.get(m[1]!);
  if (def === undefined) throw new Error(`${m[1]} is not defined`);
  return resolve(value.replace(m[0], def), v, depth + 1);
}

/** A rule's own declaration of `prop` (`background` or `color`), resolved. */
function prop(body: string, name: string, v: Vars): string {
  const m = new RegExp(`(?:^|[;{\\s])${name}\\s*:\\s*([^;]+);`).exec(body);
  if (!m) throw new Error(`no ${name} in ${body}`);
  return resolve(m[1]!, v);
}

function luminance(hex: string): number {
  const h = hex.replace("#", "");
  const full = h.length === 3 ? [...h].map((c) => c + c).join("") : h;
  if (!/^[0-9a-f]{6}$/i.test(full)) throw new Error(`not a #rrggbb colour: ${hex}`);
  const [r, g, b] = [0, 2, 4].map((i) => {
    const c = parseInt(full.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

/** The WCAG 2 contrast ratio of two colours (1 … 21). */
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

// The web chat's own names for the tokens (`--me`, `--bot`, …), declared after the token block.
const chatNames = block(CHAT, ":root", CHAT.indexOf("/* The web chat's own names"));

describe("contrast (WCAG AA, 4.5:1 for text)", () => {
  it("measures as WCAG does: white on the dark accent is the 2.47:1 the issue reported", () => {
    expect(contrast("#ffffff", "#7ea2ff")).toBeCloseTo(2.47, 2);
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
  });

  for (const scheme of ["light", "dark"] as const) {
    it(`the web chat's Send, New chat and Connect buttons, ${scheme}`, () => {
      const v = vars(scheme, [chatNames]);
      const primary = block(CHAT, "button.primary");
      const ratio = contrast(prop(primary, "color", v), prop(primary, "background", v));
      expect(ratio, `button.primary ${scheme}`).toBeGreaterThanOrEqual(4.5);
      // Send and New chat are the primary buttons.
      expect(CHAT).toMatch(/<button id="send" class="primary"/);
      expect(CHAT).toMatch(/<button id="new" type="button" class="primary"/);
      const plain = block(CHAT, "button");
      expect(contrast(prop(plain, "color", v), prop(plain, "background", v))).toBeGreaterThanOrEqual(4.5);
    });

    it(`the console's pressed buttons, current menu item and status colours, ${scheme}`, () => {
      const v = vars(scheme);
      for (const sel of [
        'button[aria-pressed="true"]',
        'nav.side a[aria-current="page"]',
        "button.primary",
      ]) {
        const b = block(CONSOLE, sel);
        expect(contrast(prop(b, "color", v), prop(b, "background", v)), sel).toBeGreaterThanOrEqual(4.5);
      }
      // Text in a status colour, muted text and links sit on cards and on the page.
      for (const fg of ["--fg", "--muted", "--good", "--bad", "--warn", "--info", "--accent"])
        for (const bg of ["--card", "--bg"])
          expect(
            contrast(resolve(`var(${fg})`, v), resolve(`var(${bg})`, v)),
            `${fg} on ${bg}`,
          ).toBeGreaterThanOrEqual(4.5);
    });
  }
});
