/** Memory: what the assistant remembers (MEMORY.md facts, memory/ notes), searchable, with where each came from; edit or forget. */
import { useState } from "preact/hooks";
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { ActionButton, Badge, Card, Empty, ErrorLine, When } from "../ui";

interface Entry {
  kind: "fact" | "note";
  file: string;
  line: number;
  date: string | null;
  text: string;
  origin: { request_id: string | null; session_id: string; at: number } | null;
}

export function Memory() {
  const m = useLoad(() => gateway.call<{ entries: Entry[]; refused: string[] }>("memory.entries"), []);
  useReloadOn(m, ["chat"]);
  const [q, setQ] = useState("");
  const [kind, setKind] = useState<"" | "fact" | "note">("");
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [draft, setDraft] = useState("");
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = (m.data?.entries ?? []).filter(
    (e) => (!kind || e.kind === kind) && words.every((w) => e.text.toLowerCase().includes(w)),
  );
  return (
    <div class="grid">
      <Card
        title="What the assistant remembers"
        id="memory"
        actions={
          <div class="seg" role="group" aria-label="kind">
            {(
              [
                ["", "All"],
                ["fact", "Facts"],
                ["note", "Notes"],
              ] as const
            ).map(([k, l]) => (
              <button type="button" key={k} aria-pressed={kind === k} onClick={() => setKind(k)}>
                {l}
              </button>
            ))}
          </div>
        }
      >
        <form class="inline" role="search" onSubmit={(e) => e.preventDefault()}>
          <label for="memory-q">Search</label>
          <input
            id="memory-q"
            type="search"
            value={q}
            onInput={(e) => setQ(e.currentTarget.value)}
            placeholder="words in a fact or note"
          />
        </form>
        <ErrorLine error={m.error} />
        {m.data?.refused.map((r) => (
          <p class="warn-line" key={r}>
            Not read: {r}
          </p>
        ))}
        {shown.length ? (
          <ul class="rows memory-list">
            {shown.map((e) => (
              <li key={`${e.file}:${e.line}:${e.text}`} data-kind={e.kind}>
                {editing === `${e.file}:${e.line}` ? (
                  <form class="stack" onSubmit={(ev) => ev.preventDefault()}>
                    <label>
                      Change this {e.kind}
                      <textarea rows={3} value={draft} onInput={(ev) => setDraft(ev.currentTarget.value)} />
                    </label>
                    <div class="toolbar">
                      <ActionButton
                        action={async () => {
                          await gateway.call("memory.edit", {
                            file: e.file,
                            line: e.line,
                            text: e.text,
                            replacement: draft,
                          });
                          setEditing(undefined);
                          m.reload();
                        }}
                      >
                        Save
                      </ActionButton>
                      <button type="button" onClick={() => setEditing(undefined)}>
                        Cancel
                      </button>
                    </div>
                  </form>
                ) : (
                  <div class="mem-text">{e.text}</div>
                )}
                <div class="muted">
                  <Badge state={e.kind === "fact" ? "ok" : "neutral"}>{e.kind}</Badge> {e.date ?? "undated"} ·{" "}
                  <code>
                    {e.file}:{e.line}
                  </code>
                  {e.origin ? (
                    <>
                      {" · written by a turn "}
                      <When ms={e.origin.at} />
                      {e.origin.request_id && (
                        <>
                          {" · "}
                          <a href={`#/traces/${encodeURIComponent(e.origin.request_id)}`}>
                            trace {e.origin.request_id.slice(0, 8)}
                          </a>
                        </>
                      )}
                    </>
                  ) : (
                    " · written outside a stored turn (by hand, or an older chat)"
                  )}
                </div>
                {editing !== `${e.file}:${e.line}` && (
                  <div class="toolbar">
                    <button
                      type="button"
                      onClick={() => {
                        setEditing(`${e.file}:${e.line}`);
                        setDraft(e.text);
                      }}
                    >
                      Edit
                    </button>
                    <ActionButton
                      danger
                      confirm={`Forget this ${e.kind}? It is removed from ${e.file}.`}
                      action={async () => {
                        await gateway.call("memory.forget", { file: e.file, line: e.line, text: e.text });
                        m.reload();
                      }}
                    >
                      Forget
                    </ActionButton>
                  </div>
                )}
              </li>
            ))}
          </ul>
        ) : (
          <Empty>
            {m.loading
              ? "Reading MEMORY.md and memory/…"
              : words.length || kind
                ? "Nothing remembered matches."
                : "Nothing remembered yet: facts the assistant saves (MEMORY.md) and its dated notes (memory/) appear here."}
          </Empty>
        )}
        <p class="muted">
          Read and written through the workspace door (no link followed): Edit and Forget change the file
          named beside the entry, which you may also edit by hand.
        </p>
      </Card>
    </div>
  );
}
