/**
 * What may appear on the desk without the owner's yes (docs/security.md, "The desk fails closed").
 *
 * The desk (`<workspace>/desk/`) is the one place a sandboxed command or a CLI engine can write.
 * After each command, whatever is new or changed there is sorted by {@link holdReason}: a PLAIN DATA
 * file passes; everything else is held and the owner is asked once.
 *
 * INVARIANT: this is an allow-list. A file is plain data only when it is a regular, non-executable
 * file whose every path component is an ordinary visible name and whose extension is on
 * {@link DATA_EXTENSIONS}. The name lists below only take away from that list (a `package.json` is
 * JSON but npm runs what it names); they never add to it, so a name nobody thought of is held, not
 * passed. Program text, tool settings (`.toml`, `.yml`, `.ini`...) and files without an extension
 * (a bare repository's `HEAD` and `config`, a `Makefile`) are therefore held as `code` unless the
 * owner allows that category.
 */

/** Why something on the desk is held. The owner may allow any of these in `config.yaml`. */
export type HoldCategory = "link" | "hidden" | "vcs" | "packages" | "instructions" | "executable" | "code";

/** Every category, in the order they are tested (the first that matches names the reason). */
export const HOLD_CATEGORIES: readonly HoldCategory[] = [
  "link",
  "hidden",
  "vcs",
  "packages",
  "instructions",
  "executable",
  "code",
];

/** One line per category, for the owner's question and `familiar doctor`. */
export const CATEGORY_WHY: Record<HoldCategory, string> = {
  link: "links and special files (a link can point anywhere; fifos and sockets are not data)",
  hidden: "names starting with a dot, which tools read as their settings (.git, .envrc, .vscode...)",
  vcs: "repository metadata: git or another version control system would read it and run what it names",
  packages: "package manifests and dependency folders: installers and build tools run what they name",
  instructions: "files other assistants and editors read as instructions or tasks (AGENTS.md, CLAUDE.md...)",
  executable: "executable files",
  code: "program text, tool settings and files without a data extension (scripts, .toml, .yml, Makefile...)",
};

/**
 * Extensions of data: documents, tables, media, archives, logs. Lower case, without the dot.
 * Deliberately without program text and tool settings (see the module comment).
 */
export const DATA_EXTENSIONS: ReadonlySet<string> = new Set(
  (
    "txt text md markdown rst adoc org tex bib csv tsv json jsonl ndjson geojson xml html htm xhtml " +
    "pdf rtf doc docx odt xls xlsx ods ppt pptx odp epub " +
    "png jpg jpeg gif webp bmp tif tiff svg ico heic heif avif " +
    "mp3 wav ogg oga opus flac m4a aac mp4 m4v webm mov mkv avi " +
    "zip tar gz tgz bz2 xz zst 7z " +
    "log out err diff patch srt vtt ics vcf eml mbox " +
    "parquet feather arrow avro orc npy npz sqlite sqlite3 db dat bin"
  ).split(" "),
);

/** Folder names that hold version control metadata (compared lower case). */
const VCS_DIRS = new Set(["_darcs", "cvs", "_mtn", "rcs", "sccs"]);
/** File names git (and others) read as repository metadata, wherever they are. */
const VCS_FILES = new Set([
  "head",
  "orig_head",
  "fetch_head",
  "merge_head",
  "packed-refs",
  "commondir",
  "gitdir",
  "_fossil_",
]);

/** Dependency folders: what is in them is loaded by name by a package manager or an interpreter. */
const PACKAGE_DIRS = new Set([
  "node_modules",
  "bower_components",
  "jspm_packages",
  "__pypackages__",
  "site-packages",
  "dist-packages",
  "vendor",
]);
/** Manifests and lock files with a data extension (the others are held as code anyway). */
const PACKAGE_FILES = new Set([
  "package.json",
  "package-lock.json",
  "npm-shrinkwrap.json",
  "composer.json",
  "deno.json",
  "tsconfig.json",
  "jsconfig.json",
  "bower.json",
  "lerna.json",
  "nx.json",
  "turbo.json",
  "angular.json",
  "project.json",
  "devcontainer.json",
  "renovate.json",
  "vercel.json",
  "app.json",
  "constraints.txt",
  "cmakelists.txt",
  "pom.xml",
  "build.xml",
  "ivy.xml",
]);
const PACKAGE_PATTERNS = [/^requirements.*\.txt$/];

/** Instructions and task files of other assistants and editors with a data extension. */
const INSTRUCTION_FILES = new Set([
  "agents.md",
  "agent.md",
  "claude.md",
  "claude.local.md",
  "gemini.md",
  "qwen.md",
  "crush.md",
  "warp.md",
  "conventions.md",
  "copilot-instructions.md",
  "mcp.json",
  "opencode.json",
  "llms.txt",
]);
const INSTRUCTION_PATTERNS = [/\.instructions\.md$/, /\.prompt\.md$/, /\.chatmode\.md$/];

/**
 * Characters that make a name lie on a screen: controls, DEL, C1, bidirectional marks and
 * overrides, zero-width characters. A name holding one is held (as `hidden`): the owner must see it.
 */
// eslint-disable-next-line no-control-regex
export const DECEPTIVE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/;

/** The kind of a desk entry, from lstat (never following a link). */
export type EntryKind = "file" | "dir" | "link" | "other";

/** One entry of the desk as the scan saw it. */
export interface DeskEntry {
  /** Desk-relative path, `/`-separated, no leading `./`. */
  rel: string;
  kind: EntryKind;
  /** st_mode (permission bits matter: an executable file is held). */
  mode: number;
}

/** The extension of a file name, lower case, or "" (a leading dot does not start one). */
function extension(name: string): string {
  const i = name.lastIndexOf(".");
  return i > 0 ? name.slice(i + 1).toLowerCase() : "";
}

/**
 * Why `e` must be held, or undefined when it is plain data (or a plain folder). `allowed` holds the
 * categories and folder names the owner allowed (`desk.allow`): an entry beneath an allowed folder
 * name passes, and so does one whose category is allowed.
 */
export function holdReason(e: DeskEntry, allowed: ReadonlySet<string> = new Set()): HoldCategory | undefined {
  const parts = e.rel.split("/").filter((p) => p !== "");
  const lower = parts.map((p) => p.toLowerCase());
  // A folder name allows what is beneath it; a category's name is never taken for a folder's
  // (`desk_allow: [code]` must not pass `code/.envrc`).
  if (lower.some((p) => allowed.has(p) && !isHoldCategory(p))) return undefined;
  const category = classify(e, parts, lower);
  return category && !allowed.has(category) ? category : undefined;
}

function classify(
  e: DeskEntry,
  parts: readonly string[],
  lower: readonly string[],
): HoldCategory | undefined {
  if (e.kind === "link" || e.kind === "other") return "link";
  if (parts.some((p) => p.startsWith(".") || DECEPTIVE.test(p))) return "hidden";
  const dirs = e.kind === "dir" ? lower : lower.slice(0, -1);
  const base = e.kind === "dir" ? "" : (lower.at(-1) ?? "");
  if (dirs.some((d) => VCS_DIRS.has(d)) || VCS_FILES.has(base)) return "vcs";
  if (dirs.some((d) => PACKAGE_DIRS.has(d))) return "packages";
  if (e.kind === "dir") return undefined;
  if (PACKAGE_FILES.has(base) || PACKAGE_PATTERNS.some((r) => r.test(base))) return "packages";
  if (INSTRUCTION_FILES.has(base) || INSTRUCTION_PATTERNS.some((r) => r.test(base))) return "instructions";
  if ((e.mode & 0o111) !== 0) return "executable";
  if (!DATA_EXTENSIONS.has(extension(base))) return "code";
  return undefined;
}

/** True when `name` is a category (as opposed to a folder name) in `desk.allow`. */
export function isHoldCategory(name: string): name is HoldCategory {
  return (HOLD_CATEGORIES as readonly string[]).includes(name);
}

/**
 * Folders (desk-relative) laid out as a git repository without being called `.git`: a `HEAD` file
 * beside `objects/` or `refs/`. Git treats such a folder as a bare repository, whatever its name,
 * and reads its `config` (`core.fsmonitor`, hooks) when the owner runs git there.
 */
export function repositoryRoots(entries: Iterable<DeskEntry>): string[] {
  const heads = new Set<string>();
  const dirs = new Set<string>();
  for (const e of entries) {
    const i = e.rel.lastIndexOf("/");
    const dir = i < 0 ? "" : e.rel.slice(0, i);
    const name = e.rel.slice(i + 1).toLowerCase();
    if (name === "head" && e.kind !== "dir") heads.add(dir);
    if ((name === "objects" || name === "refs") && e.kind === "dir") dirs.add(dir);
  }
  return [...heads].filter((d) => dirs.has(d));
}

/** True when `rel` is `root` or beneath it (`root` "" is the whole desk). */
export function beneath(root: string, rel: string): boolean {
  return root === "" || rel === root || rel.startsWith(`${root}/`);
}
