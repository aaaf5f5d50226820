/** Where the browser tests find Chromium (Debian's package), or undefined so they skip and say why. */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

export function findChromium(): string | undefined {
  for (const p of [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"])
    if (p && existsSync(p)) return p;
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Launches Debian's Chromium headless through playwright-core, with the flags every browser test uses. */
export async function launchChromium(executablePath: string): Promise<import("playwright-core").Browser> {
  const { chromium } = await import("playwright-core");
  return chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}
