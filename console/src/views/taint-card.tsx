/** Containment in the session view: a badge saying whether the session read untrusted text, and its sources. */
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import { Card, ErrorLine, fmtTime } from "../ui";

interface Source {
  kind: string;
  detail: string;
  at: number;
}

export function TaintCard(props: { sessionId: string }) {
  const t = useLoad(
    () =>
      gateway.call<{ tainted: boolean; sources: Source[] }>("sessions.taint", { sessionId: props.sessionId }),
    [props.sessionId],
  );
  useReloadOn(t, ["session.changed", "chat"]);
  const sources = t.data?.sources ?? [];
  return (
    <Card title="Untrusted input" id="session-taint">
      <ErrorLine error={t.error} />
      {t.data && !t.data.tainted && (
        <p>
          <span class="badge good">clean</span>{" "}
          <span class="muted">this conversation has read nothing untrusted</span>
        </p>
      )}
      {t.data?.tainted && (
        <>
          <p>
            <span class="badge bad">tainted</span>{" "}
            <span class="muted">
              sends, new hosts, network commands, cron and agent changes ask you first
            </span>
          </p>
          <ul class="rows" id="taint-sources">
            {sources.map((s) => (
              <li key={`${s.kind}:${s.detail}`}>
                <strong>{s.kind}</strong> <code>{s.detail}</code> <span class="muted">{fmtTime(s.at)}</span>
              </li>
            ))}
          </ul>
          <p class="muted">Only a new session (/new) is clean again.</p>
        </>
      )}
    </Card>
  );
}
