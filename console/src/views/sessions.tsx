/** Sessions: search and paging over the live sessions (one session: session-view.tsx). */
import { useState } from "preact/hooks";
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { ChannelIcon, channelLabel, channelOf } from "../names";
import { Card, Empty, ErrorLine, fmtAgo } from "../ui";

interface Row {
  sessionKey: string;
  sessionId: string;
  agentId: string;
  title: string | null;
  messageCount: number;
  updatedAt: number;
  modelOverride: string | null;
  parentId: string | null;
}
const PAGE = 25;

export function Sessions() {
  const [query, setQuery] = useState("");
  const [applied, setApplied] = useState("");
  const [offset, setOffset] = useState(0);
  const list = useLoad(
    () =>
      gateway.call<{ total: number; sessions: Row[] }>("sessions.search", {
        query: applied,
        offset,
        limit: PAGE,
      }),
    [applied, offset],
  );
  useReloadOn(list, ["session.changed"]);
  const total = list.data?.total ?? 0;
  return (
    <Card title="Sessions" id="sessions">
      <form
        class="inline"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setApplied(query.trim());
        }}
      >
        <label for="session-q">Search</label>
        <input
          id="session-q"
          type="search"
          value={query}
          onInput={(e) => setQuery(e.currentTarget.value)}
          placeholder="key, agent or words"
          title="a session key, an agent, or words in the chat"
        />
        <button type="submit">Search</button>
      </form>
      <ErrorLine error={list.error} />
      {list.data?.sessions.length ? (
        <ul class="rows session-list">
          {list.data.sessions.map((s) => (
            <li key={s.sessionId}>
              <a href={`#/sessions/${encodeURIComponent(s.agentId)}/${encodeURIComponent(s.sessionId)}`}>
                <ChannelIcon channel={channelOf(s.sessionKey)} />{" "}
                <strong>{s.title ?? "(no messages yet)"}</strong>
              </a>
              <div class="muted" title={s.sessionKey}>
                {channelLabel(channelOf(s.sessionKey))} · {s.agentId} · {s.messageCount} messages ·{" "}
                {fmtAgo(s.updatedAt)}
                {s.modelOverride && ` · model ${s.modelOverride}`}
                {s.parentId && " · continued after compaction"}
              </div>
            </li>
          ))}
        </ul>
      ) : (
        <Empty>{list.loading ? "Loading…" : "No sessions match."}</Empty>
      )}
      <nav class="pager" aria-label="pages">
        <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          ← Newer
        </button>
        <span>{total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total}` : "0"}</span>
        <button type="button" disabled={offset + PAGE >= total} onClick={() => setOffset(offset + PAGE)}>
          Older →
        </button>
      </nav>
    </Card>
  );
}
