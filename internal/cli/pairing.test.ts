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
});
