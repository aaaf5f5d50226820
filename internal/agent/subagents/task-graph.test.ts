import { describe, expect, it } from "vitest";
import { interpolate, validateGraph, TaskGraphError } from "./task-graph.js";

describe("validateGraph", () => {
  it("orders a diamond topologically", () => {
    const order = validateGraph([
      { id: "d", message: "{{b.output}} {{c.output}}", depends_on: ["b", "c"] },
      { id: "b", message: "b {{a.output}}", depends_on: ["a"] },
      { id: "c", message: "c", depends_on: ["a"] },
      { id: "a", message: "a" },
    ]).map((t) => t.id);
    expect(order.indexOf("a")).toBe(0);
    expect(order.indexOf("d")).toBe(3);
  });
  it.each([
    [
      [
        { id: "a", message: "x" },
        { id: "a", message: "y" },
      ],
      /duplicate task ids: a/,
    ],
    [[{ id: "a", message: "x", depends_on: ["zz"] }], /unknown dependencies: a -> zz/],
    [
      [
        { id: "a", message: "x", depends_on: ["c"] },
        { id: "b", message: "x", depends_on: ["a"] },
        { id: "c", message: "x", depends_on: ["b"] },
      ],
      /cycle among: .*a.*b.*c|cycle among: .*c.*b.*a/,
    ],
    [
      [
        { id: "a", message: "{{b.output}}" },
        { id: "b", message: "x" },
      ],
      /does not list b in depends_on/,
    ],
    [[], /empty/],
  ])("rejects %#", (tasks, msg) => {
    expect(() => validateGraph(tasks)).toThrow(TaskGraphError);
    expect(() => validateGraph(tasks)).toThrow(msg);
  });
});

describe("interpolate", () => {
  it("replaces outputs and caps them at 4000 characters", () => {
    const long = "x".repeat(5000);
    const out = interpolate(
      "A={{a.output}} B={{b.output}}",
      new Map([
        ["a", "alpha"],
        ["b", long],
      ]),
    );
    expect(out.startsWith("A=alpha B=xxxx")).toBe(true);
    expect(out).toContain("[... truncated 1000 characters]");
    expect(out.length).toBeLessThan(4100);
  });
});
