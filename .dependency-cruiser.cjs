// @ts-check
/**
 * The layer check (`npm run lint:layers`, part of `npm run check`). The layer order is written once,
 * in docs/architecture.md (the fenced block under "Layer order"); this file reads it from there so
 * the doc and the check can never disagree. A module may import its own folder and any folder on a
 * lower line; never a folder on the same line or above it, and never in a circle.
 */
const fs = require("node:fs");
const path = require("node:path");

/** Parses the `layers` block of docs/architecture.md: one line per layer, top first, folders split by spaces. */
function readLayers() {
  const doc = fs.readFileSync(path.join(__dirname, "docs", "architecture.md"), "utf8");
  const m = /```layers\n([\s\S]*?)```/.exec(doc);
  if (!m || !m[1]) throw new Error("docs/architecture.md: no ```layers block found");
  return m[1]
    .split("\n")
    .map((l) => l.replace(/#.*$/, "").trim())
    .filter(Boolean)
    .map((l) => l.split(/\s+/).map((f) => f.replace(/\/$/, "")));
}

const layers = readLayers();

// Every folder of internal/ must have its place in the order: a new room is placed on purpose.
const listed = new Set(layers.flat());
const internalDir = path.join(__dirname, "internal");
if (fs.existsSync(internalDir))
  for (const d of fs.readdirSync(internalDir, { withFileTypes: true }))
    if (d.isDirectory() && !listed.has(`internal/${d.name}`))
      throw new Error(`internal/${d.name}/ is not in the layer order of docs/architecture.md: add it there`);
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const folderRe = (folders) => `^(${folders.map(esc).join("|")})/`;

/** For every folder: it may not import a folder on its own line (other than itself) or above. */
const upward = [];
layers.forEach((line, i) => {
  const above = layers.slice(0, i).flat();
  for (const folder of line) {
    const forbidden = [...above, ...line.filter((f) => f !== folder)];
    if (forbidden.length === 0) continue;
    upward.push({
      name: `layer:${folder}`,
      comment: `${folder} sits on layer ${i + 1} of docs/architecture.md; it may only import lower layers`,
      severity: "error",
      from: { path: `^${esc(folder)}/`, pathNot: "\\.test\\.ts$" },
      to: { path: folderRe(forbidden) },
    });
  }
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: "no-circular",
      comment: "an import circle means two modules cannot be understood, tested or loaded apart",
      severity: "error",
      from: { path: "^(internal|cmd)/" },
      to: { circular: true },
    },
    {
      name: "core-imports-nothing",
      comment: "internal/core holds the contracts only: no internal imports and no packages",
      severity: "error",
      from: { path: "^internal/core/", pathNot: "\\.test\\.ts$" },
      to: { pathNot: "^internal/core/", dependencyTypesNot: ["core"] },
    },
    {
      name: "no-platform-sdk-outside-its-channel",
      comment: "only internal/channels/<name>/ may import grammy or discord.js",
      severity: "error",
      from: { path: "^internal/", pathNot: "^internal/channels/(telegram|discord)/" },
      to: { path: "node_modules/(grammy|@grammyjs|discord\\.js|@discordjs)/" },
    },
    {
      name: "workspace-through-the-door",
      comment:
        "docs/security.md, invariant 1: the daemon touches the workspace only through internal/workspace/ " +
        "(no link followed, regular files, capped). Modules that read or write the workspace may not use " +
        "node:fs; the allowlist is the model's own file tools (fd-relative safe-open), the exec sandbox and " +
        "CLI engines (invariants 3 and 4) and the one skills file that looks for binaries on PATH",
      severity: "error",
      from: {
        path: "^internal/(agent|memory|skills|heartbeat|media|channels|inbound|cron|tools)/",
        pathNot: [
          "\\.test\\.ts$",
          "^internal/agent/engines/",
          "^internal/tools/sandbox/",
          "^internal/tools/(exec-tool|exec-escape|safe-open|workspace-path|fs-tools|plant-guard)\\.ts$",
          "^internal/tools/mcp/mcp-manager\\.ts$",
          "^internal/skills/bin-on-path\\.ts$",
          // Not the workspace: the parse child's script and /proc (media), the proxy's socket dir (tmp).
          "^internal/media/document-parser\\.ts$",
          "^internal/tools/egress/egress-proxy\\.ts$",
        ],
      },
      to: { dependencyTypes: ["core"], path: "^(node:)?fs(/promises)?$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/|\\.test\\.ts$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
