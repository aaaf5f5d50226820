/**
 * Where the installed package lives: the folder holding package.json, and with it the shipped
 * config.yaml, workspace/ and skills/. Found from this file's location, which works from the sources
 * (internal/config/), from the tsc build (dist/internal/config/) and from the bundle (dist/bundle/).
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (holds package.json); the working directory when none is found. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      readFileSync(join(dir, "package.json"));
      return dir;
    } catch {
      dir = dirname(dir);
    }
  }
  return process.cwd();
}
