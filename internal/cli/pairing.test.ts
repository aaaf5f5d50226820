import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../store/db.js";
import { allMigrations } from "../daemon/migrations.js";
import { systemClock } from "../core/clock.js";
import { PairingStore } from "../channels/common/pairing.js";
import { pairingApprove, pairingList } from "./pairing.js";

let dir: string;
afterEach(() => {
  process.exitCode = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("familiar pairing", () => {
  it("lists a pending code and approves it into the stored allow list", async () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-pairing-"));
    const cfg = join(dir, "config.yaml");
    writeFileSync(cfg, `data_dir: ${join(dir, "data")}\nworkspace: ${join(dir, "ws")}\n`);
    const db = openDatabase(join(dir, "data"), { migrations: allMigrations });
    const store = new PairingStore(db, systemClock);
    const d = store.requestCode("telegram", { id: "42", name: "Eve" });
    if (d.kind !== "pair") throw new Error("expected a code");
    const lines: string[] = [];
    await pairingList({ config: cfg, out: (l) => lines.push(l) });
    expect(lines.join("\n")).toContain(d.code);
    expect(await pairingApprove("nope1234", { config: cfg, out: (l) => lines.push(l) })).toBe(false);
    expect(process.exitCode).toBe(1);
    expect(
      await pairingApprove(d.code.toLowerCase(), {
        config: cfg,
        channel: "telegram",
        out: (l) => lines.push(l),
      }),
    ).toBe(true);
    expect(lines.at(-1)).toContain("Approved telegram user 42 (Eve)");
    expect(store.isAllowed("telegram", "42", [])).toBe(true);
    expect(store.pending()).toHaveLength(0);
    db.close();
  });

  it("prints a stranger's display name with its terminal escapes made visible, on its own line", async () => {
    dir = mkdtempSync(join(tmpdir(), "familiar-pairing-"));
    const cfg = join(dir, "config.yaml");
    writeFileSync(cfg, `data_dir: ${join(dir, "data")}\nworkspace: ${join(dir, "ws")}\n`);
    const db = openDatabase(join(dir, "data"), { migrations: allMigrations });
    const store = new PairingStore(db, systemClock);
    // Set the title, clear the screen, return to column 0 and forge another request's line; OSC 52
    // (clipboard); an 8-bit CSI; a right-to-left override.
    const evil =
      "Eve\x1b]0;pwned\x07\x1b[2J\r  ABCD2345  telegram  user 1 (Owner)\n  forged\x1b]52;c;ZWNobyBoaQ==\x07\x9b31m\u202eevil";
    const d = store.requestCode("telegram", { id: "43", name: evil });
    if (d.kind !== "pair") throw new Error("expected a code");
    const lines: string[] = [];
    await pairingList({ config: cfg, out: (l) => lines.push(l) });
    const text = lines.join("\n");
    // eslint-disable-next-line no-control-regex
    expect(text).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]/);
    const line = lines.find((l) => l.includes(d.code)) ?? "";
    expect(line).toContain("user 43 (Eve\\x1b]0;pwned\\x07\\x1b[2J\\x0d  ABCD2345");
    expect(line).toContain("\\x0a  forged");
    expect(line).toContain("\\x9b31m\\u{202e}evil)");
    expect(lines).toHaveLength(3); // "Pending requests:", the one request, "No approved users"
    await pairingApprove(d.code, { config: cfg, out: (l) => lines.push(l) });
    expect(lines.at(-1)).not.toContain("\x1b");
    db.close();
  });
});
