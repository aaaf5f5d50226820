/**
 * `familiar init [DIR]`: writes the commented config.yaml and a copy of the workspace template
 * (prompt files, memory/, skills/README.md) into DIR. Never overwrites: when any target file exists,
 * nothing is written and the existing files are listed.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { packageRoot } from "./program.js";

/** One file init writes: where it comes from and where it goes. */
export interface InitFile {
  from: string;
  to: string;
}

/** The files `init` would write into `dir`, from the package at `root`. */
export function initPlan(dir: string, root = packageRoot()): InitFile[] {
  const target = resolve(dir);
  const plan: InitFile[] = [{ from: join(root, "config.yaml"), to: join(target, "config.yaml") }];
  const walk = (src: string, dst: string): void => {
    for (const name of readdirSync(src).sort()) {
      const s = join(src, name);
      const d = join(dst, name);
      if (statSync(s).isDirectory()) walk(s, d);
      else plan.push({ from: s, to: d });
    }
  };
  walk(join(root, "workspace"), join(target, "workspace"));
  return plan;
}

export interface InitResult {
  written: string[];
  /** Files that already existed (nothing was written when non-empty). */
  existing: string[];
}

/** Writes the plan unless any target exists. */
export function initDir(dir: string, root = packageRoot()): InitResult {
  const plan = initPlan(dir, root);
  const existing = plan.filter((f) => existsSync(f.to)).map((f) => f.to);
  if (existing.length > 0) return { written: [], existing };
  for (const f of plan) {
    mkdirSync(dirname(f.to), { recursive: true });
    // COPYFILE_EXCL: a file that appeared since the check is still never overwritten.
    copyFileSync(f.from, f.to, 1);
  }
  return { written: plan.map((f) => f.to), existing: [] };
}

/** CLI entry. Exit code 1 when files exist. */
export function initCommand(dirArg: string | undefined): void {
  const dir = resolve(dirArg ?? process.cwd());
  const shown = (p: string): string => {
    const rel = relative(process.cwd(), p);
    return rel === "" ? "." : rel.startsWith("..") ? p : rel;
  };
  let result: InitResult;
  try {
    result = initDir(dir);
  } catch (err) {
    process.stderr.write(`familiar init: cannot write into ${shown(dir)}: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  if (result.existing.length > 0) {
    const list = result.existing.map((f) => `  ${shown(f)}`).join("\n");
    process.stderr.write(
      `familiar init: refusing to overwrite existing files in ${shown(dir)} (nothing was written):\n${list}\n` +
        "Move them away or choose another directory.\n",
    );
    process.exitCode = 1;
    return;
  }
  const cfg = shown(join(dir, "config.yaml"));
  process.stdout.write(
    `Wrote ${shown(join(dir, "config.yaml"))} and ${shown(join(dir, "workspace"))}/ (${result.written.length} files).\n` +
      "Next:\n" +
      `  edit ${cfg}            (add a model provider; keep keys in the environment)\n` +
      `  familiar config check --config ${cfg}\n` +
      `  familiar run --config ${cfg}\n`,
  );
}
