// Makes the owner's config.yaml from the shipped defaults (config.default.yaml) when there is none.
// Run by `npm install` (the `prepare` script) so `npm start` works on a fresh clone.
//
// Why a copy: config.yaml is the owner's file (a port, providers, secrets) and is not tracked by git;
// config.default.yaml stays pristine, so `familiar init` and the test suite never see the owner's edits.
// An existing config.yaml is never touched.
import { copyFileSync, constants, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = join(root, "config.default.yaml");
const to = join(root, "config.yaml");
if (existsSync(from) && !existsSync(to)) {
  try {
    copyFileSync(from, to, constants.COPYFILE_EXCL);
    console.log("familiar: wrote config.yaml from config.default.yaml (edit it freely; git ignores it)");
  } catch (err) {
    if (err.code !== "EEXIST") throw err;
  }
}
