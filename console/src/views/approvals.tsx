/** Approvals and pairing: pending exec approvals (approve/deny as the owner), pairing requests, allow lists. */
import { gateway } from "../gateway";
import { useLoad, usePoll, useReloadOn } from "../hooks";
import { ActionButton, Card, Empty, ErrorLine, fmtAgo, fmtTime } from "../ui";
import { SessionLabel, useSessionNames } from "../names";
import { approvalAsk } from "./approval-ask";
import { GrantsCard } from "./grants-card";

interface Approval {
  id: string;
  kind: string;
  summary: string;
  sessionKey: string;
  replyTarget: string;
  createdAt: number;
  expiresAt: number;
  /** Standing answers offered (containment): "target" (this host for a while), "session". */
  choices?: string[];
  /** The whole question (the payload never cut; controls and bidi marks escaped by the daemon). */
  text?: string;
  /** sha256 of the shown payload: an answer names it, so it settles exactly what is shown here. */
  payloadHash?: string;
}
interface PairReq {
  channel: string;
  code: string;
  userId: string;
  userName?: string | null;
  createdAt: number;
  expiresAt: number;
}
interface Allowed {
  channel: string;
  userId: string;
  userName?: string | null;
  approvedAt: number;
}

interface ChannelCfg {
  enabled?: boolean;
  dm_policy?: string;
  allow_from?: (string | number)[];
}

/** The allow lists of config.yaml (`channels.<name>.allow_from`, `dm_policy`), as the daemon has them. */
function ConfigAllowLists() {
  const cfg = useLoad(
    () => gateway.call<{ config: { channels?: Record<string, ChannelCfg> } }>("config.get"),
    [],
  );
  useReloadOn(cfg, ["config.reloaded"]);
  const channels = Object.entries(cfg.data?.config.channels ?? {}).filter(
    ([, c]) => c && typeof c === "object" && c.enabled,
  );
  return (
    <Card title="Allow lists (config.yaml)" id="config-allow">
      <ErrorLine error={cfg.error} />
      {channels.length ? (
        <ul class="rows">
          {channels.map(([name, c]) => (
            <li key={name}>
              <strong>{name}</strong> <span class="muted">dm_policy {c.dm_policy ?? "pairing"}</span>
              <div>
                {c.allow_from?.length ? c.allow_from.join(", ") : <span class="muted">nobody listed</span>}
              </div>
            </li>
          ))}
        </ul>
      ) : (
        <Empty>{cfg.loading ? "Loading…" : "No chat channel is enabled."}</Empty>
      )}
    </Card>
  );
}

export function Approvals() {
  const ap = useLoad(() => gateway.call<{ approvals: Approval[] }>("approvals.list"), []);
  const pr = useLoad(() => gateway.call<{ requests: PairReq[]; allowed: Allowed[] }>("pairing.list"), []);
  // New approvals arrive during turns (tool events); pairing codes from channel messages.
  // A closed question (answered elsewhere, expired, withdrawn with its turn) leaves at once.
  useReloadOn(ap, ["chat", "tick", "approval.closed"]);
  useReloadOn(pr, ["chat", "tick", "channel.state"]);
  // No event announces a new approval or pairing code: look again every 2 s while this view is open.
  usePoll(ap, 2000);
  usePoll(pr, 5000);
  const names = useSessionNames([], ap.data?.approvals.map((a) => a.sessionKey) ?? []);
  return (
    <div class="grid">
      <Card
        title="Pending approvals"
        id="approvals"
        actions={
          <button type="button" onClick={() => ap.reload()}>
            Refresh
          </button>
        }
      >
        <ErrorLine error={ap.error} />
        {ap.data?.approvals.length ? (
          <ul class="rows">
            {ap.data.approvals.map((a) => (
              <li key={a.id} data-approval={a.id}>
                {/* Headed by what it asks; the chat it came from by its name and channel. */}
                <h3 class="ask">{approvalAsk(a.kind, a.summary)}</h3>
                <div class="muted ask-from">
                  from <SessionLabel sessionKey={a.sessionKey} title={names.name(a.sessionKey)?.title} /> ·
                  expires {fmtAgo(a.expiresAt)}
                </div>
                <pre class="wrap">{a.text ?? a.summary}</pre>
                {a.payloadHash && <div class="muted">sha256 {a.payloadHash}</div>}
                <div class="toolbar">
                  <ActionButton
                    primary
                    label={`approve ${a.id}`}
                    action={async () => {
                      await gateway.call("approvals.resolve", {
                        id: a.id,
                        decision: "approve",
                        ...(a.payloadHash ? { hash: a.payloadHash } : {}),
                      });
                      ap.reload();
                    }}
                  >
                    Approve
                  </ActionButton>
                  {(a.choices ?? []).map((c) => (
                    <ActionButton
                      key={c}
                      label={`approve ${a.id} for ${c}`}
                      action={async () => {
                        await gateway.call("approvals.resolve", {
                          id: a.id,
                          decision: "approve",
                          scope: c,
                          ...(a.payloadHash ? { hash: a.payloadHash } : {}),
                        });
                        ap.reload();
                      }}
                    >
                      {c === "session" ? "Yes for this session" : "Yes for this host"}
                    </ActionButton>
                  ))}
                  <ActionButton
                    danger
                    label={`deny ${a.id}`}
                    action={async () => {
                      await gateway.call("approvals.resolve", {
                        id: a.id,
                        decision: "deny",
                        ...(a.payloadHash ? { hash: a.payloadHash } : {}),
                      });
                      ap.reload();
                    }}
                  >
                    Deny
                  </ActionButton>
                </div>
              </li>
            ))}
          </ul>
        ) : (
          <Empty>{ap.loading ? "Loading…" : "Nothing is waiting for you."}</Empty>
        )}
      </Card>
      <GrantsCard />
      <Card title="Pairing requests" id="pairing">
        <ErrorLine error={pr.error} />
        {pr.data?.requests.length ? (
          <ul class="rows">
            {pr.data.requests.map((r) => (
              <li key={`${r.channel}:${r.code}`}>
                <strong>{r.userName ?? r.userId}</strong>{" "}
                <span class="muted">
                  {r.channel} user {r.userId} · code <code>{r.code}</code> · expires {fmtAgo(r.expiresAt)}
                </span>
                <ActionButton
                  action={async () => {
                    await gateway.call("pairing.approve", { channel: r.channel, code: r.code });
                    pr.reload();
                  }}
                >
                  Approve
                </ActionButton>
              </li>
            ))}
          </ul>
        ) : (
          <Empty>{pr.loading ? "Loading…" : "No pairing requests."}</Empty>
        )}
      </Card>
      <Card title="Paired users" id="allowed">
        {pr.data?.allowed.length ? (
          <ul class="rows">
            {pr.data.allowed.map((u) => (
              <li key={`${u.channel}:${u.userId}`}>
                <strong>{u.userName ?? u.userId}</strong>{" "}
                <span class="muted">
                  {u.channel} user {u.userId} · since {fmtTime(u.approvedAt)}
                </span>
                <ActionButton
                  danger
                  confirm={`Revoke ${u.userName ?? u.userId} on ${u.channel}?`}
                  action={async () => {
                    await gateway.call("pairing.revoke", { channel: u.channel, userId: u.userId });
                    pr.reload();
                  }}
                >
                  Revoke
                </ActionButton>
              </li>
            ))}
          </ul>
        ) : (
          <Empty>No paired users.</Empty>
        )}
      </Card>
      <ConfigAllowLists />
    </div>
  );
}
