/** Containment grants: the owner's standing "yes for this host / this session" answers, revocable. */
import { gateway } from "../gateway";
import { useLoad, usePoll, useReloadOn } from "../hooks";
import { ActionButton, Card, Empty, ErrorLine, fmtAgo } from "../ui";

interface Grant {
  id: string;
  sessionKey: string;
  sink: string;
  target: string;
  scope: string;
  createdAt: number;
  expiresAt: number | null;
}

export function GrantsCard() {
  const g = useLoad(() => gateway.call<{ grants: Grant[] }>("approvals.grants"), []);
  useReloadOn(g, ["chat", "tick"]);
  usePoll(g, 5000);
  return (
    <Card title="Grants (tainted conversations)" id="grants">
      <ErrorLine error={g.error} />
      {g.data?.grants.length ? (
        <ul class="rows">
          {g.data.grants.map((x) => (
            <li key={x.id} data-grant={x.id}>
              <strong>{x.sink}</strong> {x.scope === "session" ? "whole session" : <code>{x.target}</code>}{" "}
              <span class="muted">
                {x.sessionKey} · {x.expiresAt ? `expires ${fmtAgo(x.expiresAt)}` : "until the session ends"}
              </span>
              <ActionButton
                danger
                label={`revoke ${x.id}`}
                action={async () => {
                  await gateway.call("approvals.revoke", { id: x.id });
                  g.reload();
                }}
              >
                Revoke
              </ActionButton>
            </li>
          ))}
        </ul>
      ) : (
        <Empty>{g.loading ? "Loading…" : "No standing grants."}</Empty>
      )}
    </Card>
  );
}
