import { describe, expect, it } from "vitest";
import { configSchema } from "../../config/schema.js";
import { callHash, stableJson } from "./call-hash.js";
import {
  createLoopDetector,
  type LoopCheck,
  type LoopDetectionConfig,
  type LoopDetectorKind,
} from "./loop-detector.js";
import { pollBackoff } from "./poll-backoff.js";

/** Real defaults from the schema, with overrides applied through the schema too. */
function cfg(overrides: Record<string, unknown> = {}): LoopDetectionConfig {
  return configSchema.parse({ agents: { defaults: { loop_detection: overrides } } }).agents.defaults
    .loop_detection;
}

interface Step {
  name: string;
  args: unknown;
  result: string;
}

/** Runs a sequence the way the agent loop does: blocked calls do not run and get no afterCall. */
function run(steps: Step[], config = cfg()): LoopCheck[] {
  const d = createLoopDetector(config);
  const out: LoopCheck[] = [];
  for (const s of steps) {
    const check = d.beforeCall({ name: s.name, args: s.args });
    out.push(check);
    if (check.verdict === "ok" || check.verdict === "warning")
      d.afterCall({ name: s.name, args: s.args }, s.result);
    if (check.verdict === "breaker") break;
  }
  return out;
}

/** 1-based index of the first call where `detector` reports `level`, or undefined. */
function firstAt(checks: LoopCheck[], detector: LoopDetectorKind, level: string): number | undefined {
  const i = checks.findIndex((c) => c.findings.some((f) => f.detector === detector && f.level === level));
  return i < 0 ? undefined : i + 1;
}

function times(n: number, f: (i: number) => Step): Step[] {
  return Array.from({ length: n }, (_, i) => f(i));
}

const same = (i: number): Step => ({ name: "read_file", args: { path: "/etc/hosts" }, result: `r${i}` });
const poll = (result: (i: number) => string) => (i: number) => ({
  name: "web_fetch",
  args: { url: "https://example.com/status" },
  result: result(i),
});
const alt = (i: number): Step =>
  i % 2 === 0
    ? { name: "read_file", args: { path: "a.txt" }, result: "A" }
    : { name: "list_dir", args: { path: "." }, result: "B" };

interface Row {
  name: string;
  steps: Step[];
  config?: LoopDetectionConfig;
  detector: LoopDetectorKind;
  /** Expected first call index per level; undefined = must never trip at that level. */
  warning?: number;
  critical?: number;
  breaker?: number;
}

const table: Row[] = [
  // generic repeat
  {
    name: "same tool+args, changing results",
    steps: times(35, same),
    detector: "generic_repeat",
    warning: 10,
    critical: 20,
  },
  {
    name: "same args in different key order and as raw JSON",
    steps: times(25, (i) => ({
      name: "search",
      args:
        i % 3 === 0 ? { q: "x", limit: 5 } : i % 3 === 1 ? { limit: 5, q: "x" } : '{ "q": "x", "limit": 5 }',
      result: String(i),
    })),
    detector: "generic_repeat",
    warning: 10,
    critical: 20,
  },
  {
    name: "changing args never trips",
    steps: times(60, (i) => ({ name: "read_file", args: { path: `f${i}.txt` }, result: "same" })),
    detector: "generic_repeat",
  },
  {
    name: "interleaved with distinct calls counts within the window (10th repeat = call 19)",
    steps: times(40, (i) => (i % 2 === 0 ? same(i) : { name: "echo", args: { i }, result: "x" })),
    detector: "generic_repeat",
    warning: 19,
  },
  {
    name: "repeats spread wider than the window never reach 10",
    steps: times(200, (i) => (i % 5 === 0 ? same(i) : { name: "echo", args: { i }, result: "x" })),
    detector: "generic_repeat",
  },
  {
    name: "poll tools are left to known_poll",
    steps: times(
      29,
      poll((i) => `progress ${i}%`),
    ),
    detector: "generic_repeat",
  },
  {
    name: "disabled detector",
    steps: times(29, same),
    config: cfg({ generic_repeat: { enabled: false } }),
    detector: "generic_repeat",
  },
  // known poll without progress
  {
    name: "identical poll results",
    steps: times(
      29,
      poll(() => "running"),
    ),
    detector: "known_poll",
    warning: 10,
    critical: 20,
  },
  {
    name: "progress resets the run (changes at call 5, warning 10 later)",
    steps: times(
      29,
      poll((i) => (i < 4 ? "queued" : "running")),
    ),
    detector: "known_poll",
    warning: 14,
    critical: 24,
  },
  {
    name: "poll with progress never trips",
    steps: times(
      29,
      poll((i) => `${i}%`),
    ),
    detector: "known_poll",
  },
  {
    name: "alternating results never trip",
    steps: times(
      29,
      poll((i) => (i % 2 ? "a" : "b")),
    ),
    detector: "known_poll",
  },
  {
    name: "non-poll tool with identical results is not a poll",
    steps: times(29, (i) => ({ ...same(i), result: "same" })),
    detector: "known_poll",
  },
  {
    name: "interleaved polls: other calls ignored, window caps the run at 15",
    steps: times(80, (i) =>
      i % 2 === 0 ? poll(() => "running")(i) : { name: "echo", args: { i }, result: "x" },
    ),
    detector: "known_poll",
    warning: 19,
  },
  // ping-pong
  {
    name: "A,B,A,B with stable results",
    steps: times(29, alt),
    detector: "ping_pong",
    warning: 10,
    critical: 20,
  },
  {
    name: "same tool, two argument sets",
    steps: times(25, (i) => ({ name: "read_file", args: { path: i % 2 ? "b" : "a" }, result: "same" })),
    detector: "ping_pong",
    warning: 10,
    critical: 20,
  },
  {
    name: "A,B alternation with changing results never trips",
    steps: times(29, (i) => ({ ...alt(i), result: `${i}` })),
    detector: "ping_pong",
  },
  {
    name: "three-way rotation never trips",
    steps: times(29, (i) => ({ name: "read_file", args: { path: `f${i % 3}` }, result: "same" })),
    detector: "ping_pong",
  },
  {
    name: "A,A,B,B pairs never trip",
    steps: times(29, (i) => ({
      name: "read_file",
      args: { path: Math.floor(i / 2) % 2 ? "b" : "a" },
      result: "s",
    })),
    detector: "ping_pong",
  },
  {
    name: "a break in the alternation restarts the count",
    steps: [...times(8, alt), { name: "echo", args: {}, result: "x" }, ...times(12, alt)],
    detector: "ping_pong",
    warning: 19,
  },
  // circuit breaker
  {
    name: "30 identical calls with history_size 30",
    steps: times(40, same),
    detector: "circuit_breaker",
    breaker: 30,
  },
  {
    name: "breaker counts to its limit even with a smaller history",
    steps: times(40, same),
    config: cfg({ history_size: 10, generic_repeat: { warning: 5, critical: 8 } }),
    detector: "circuit_breaker",
    breaker: 30,
  },
  {
    name: "poll tool with progress still hits the breaker",
    steps: times(
      40,
      poll((i) => `${i}%`),
    ),
    detector: "circuit_breaker",
    breaker: 30,
  },
  {
    name: "one different call resets until it leaves the breaker window",
    steps: [...times(14, same), { name: "echo", args: {}, result: "x" }, ...times(40, same)],
    detector: "circuit_breaker",
    breaker: 45,
  },
  {
    name: "custom limit",
    steps: times(20, same),
    config: cfg({ circuit_breaker: { limit: 12 } }),
    detector: "circuit_breaker",
    breaker: 12,
  },
  {
    name: "breaker disabled",
    steps: times(60, same),
    config: cfg({ circuit_breaker: { enabled: false } }),
    detector: "circuit_breaker",
  },
  {
    name: "loop detection disabled",
    steps: times(60, same),
    config: cfg({ enabled: false }),
    detector: "circuit_breaker",
  },
];

describe("loop detector thresholds", () => {
  it.each(table)("$detector: $name", (row) => {
    const checks = run(row.steps, row.config);
    expect(firstAt(checks, row.detector, "warning")).toBe(row.warning);
    expect(firstAt(checks, row.detector, "critical")).toBe(row.critical);
    expect(firstAt(checks, row.detector, "breaker")).toBe(row.breaker);
  });
});

describe("loop detector verdicts and messages", () => {
  it("escalates ok -> warning -> critical -> breaker with counts and tool on every finding", () => {
    const checks = run(times(30, same));
    expect(checks.slice(0, 9).every((c) => c.verdict === "ok")).toBe(true);
    expect(checks.slice(9, 19).every((c) => c.verdict === "warning")).toBe(true);
    expect(checks.slice(19, 29).every((c) => c.verdict === "critical")).toBe(true);
    expect(checks[29]!.verdict).toBe("breaker");
    const warn = checks[9]!;
    expect(warn.findings).toEqual([
      expect.objectContaining({ detector: "generic_repeat", count: 10, tool: "read_file" }),
    ]);
    expect(warn.message).toMatch(/^You have called read_file with identical arguments 10 times/);
    expect(checks[19]!.message).toMatch(
      /^read_file was called with identical arguments 20 times in this turn, so this call was not run/,
    );
    expect(checks[29]!.message).toMatch(/^read_file was called with the same arguments 30 times$/);
  });

  it("suggests a growing poll backoff in the warning", () => {
    const checks = run(
      times(
        19,
        poll(() => "running"),
      ),
    );
    const w10 = checks[9]!;
    expect(w10.verdict).toBe("warning");
    expect(w10.backoffMs).toBe(10_000);
    expect(w10.message).toContain("Wait at least 10 s before polling again");
    expect(checks[18]!.backoffMs).toBe(20_000);
  });

  it("blocked calls keep counting so an ignored block ends in the breaker", () => {
    const d = createLoopDetector(cfg());
    let last: LoopCheck | undefined;
    let n = 0;
    // Only beforeCall: the model keeps asking, nothing runs after the block.
    while (n < 100) {
      n++;
      last = d.beforeCall({ name: "web_fetch", args: { url: "u" } });
      if (last.verdict === "ok" || last.verdict === "warning")
        d.afterCall({ name: "web_fetch", args: { url: "u" } }, "same");
      if (last.verdict === "breaker") break;
    }
    expect(n).toBe(30);
  });

  it("matches parallel identical calls to their results", () => {
    const d = createLoopDetector(cfg());
    for (let i = 0; i < 4; i++) {
      d.beforeCall({ name: "web_fetch", args: { url: "u" } });
      d.beforeCall({ name: "web_fetch", args: { url: "u" } });
      d.afterCall({ name: "web_fetch", args: { url: "u" } }, "same");
      d.afterCall({ name: "web_fetch", args: { url: "u" } }, "same");
    }
    // 8 identical results so far; calls 9 and 10 -> the 10th warns.
    expect(d.beforeCall({ name: "web_fetch", args: { url: "u" } }).verdict).toBe("ok");
    d.afterCall({ name: "web_fetch", args: { url: "u" } }, "same");
    const c = d.beforeCall({ name: "web_fetch", args: { url: "u" } });
    expect(c.findings[0]).toMatchObject({ detector: "known_poll", count: 10 });
  });

  it("reset forgets the turn chain", () => {
    const d = createLoopDetector(cfg());
    for (let i = 0; i < 9; i++) d.beforeCall({ name: "x", args: {} });
    d.reset();
    expect(d.beforeCall({ name: "x", args: {} }).verdict).toBe("ok");
  });

  it("reports unreachable thresholds", () => {
    const d = createLoopDetector(cfg({ history_size: 15 }));
    expect(d.configWarnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining("generic_repeat.critical (20) exceeds history_size (15)"),
      ]),
    );
    expect(createLoopDetector(cfg()).configWarnings).toEqual([]);
  });
});

describe("hashing", () => {
  it("is stable under key order and formatting", () => {
    expect(stableJson({ b: [1, { d: 1, c: 2 }], a: "x" })).toBe('{"a":"x","b":[1,{"c":2,"d":1}]}');
    expect(callHash("t", { a: 1, b: 2 })).toBe(callHash("t", '{"b": 2, "a": 1}'));
    expect(callHash("t", { a: 1 })).not.toBe(callHash("u", { a: 1 }));
    expect(callHash("t", "not json")).not.toBe(callHash("t", "also not json"));
    expect(callHash("t", "")).toBe(callHash("t", {}));
  });
});

describe("pollBackoff", () => {
  it.each([
    [1, 0],
    [4, 0],
    [5, 5_000],
    [10, 10_000],
    [15, 20_000],
    [20, 40_000],
    [30, 160_000],
    [50, 300_000],
  ])("count %i -> %i ms", (count, ms) => {
    expect(pollBackoff(count).delayMs).toBe(ms);
  });
});
