/** Cron and heartbeat: jobs with next run, last runs, run now, pause/resume, add/remove; heartbeat ticks. */
import { useState } from "preact/hooks";
import { gateway } from "../gateway";
import { useLoad, useReloadOn } from "../hooks";
import {
  ActionButton,
  Badge,
  Card,
  Empty,
  ErrorLine,
  fmtAgo,
  fmtDur,
  fmtInt,
  fmtTime,
  Table,
  When,
} from "../ui";

interface Job {
  id: string;
  source: "config" | "runtime";
  schedule: string;
  message: string;
  deliver: string;
  enabled: boolean;
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastStatus: string | null;
  lastError: string | null;
  running: boolean;
  problem: string | null;
}
interface Run {
  id: number;
  trigger: string;
  startedAt: number;
  endedAt: number | null;
  status: string;
  error: string | null;
  tokens: number;
  outputPreview: string | null;
}
interface HbRun {
  id: number;
  at: number;
  endedAt: number | null;
  status: string;
  reason: string | null;
  tokens: number;
  delivered: boolean;
}

export function Cron() {
  const jobs = useLoad(() => gateway.call<{ jobs: Job[] }>("cron.list"), []);
  useReloadOn(jobs, ["cron"]);
  const [open, setOpen] = useState<string | undefined>(undefined);
  return (
    <div class="grid">
      <Card title="Cron jobs" id="cron-jobs">
        <ErrorLine error={jobs.error} />
        {jobs.data?.jobs.length ? (
          <ul class="rows">
            {jobs.data.jobs.map((j) => (
              <li key={j.id} data-job={j.id}>
                <div>
                  <strong>{j.id}</strong>{" "}
                  <Badge
                    state={
                      j.running
                        ? "running"
                        : !j.enabled
                          ? "paused"
                          : j.problem
                            ? "error"
                            : (j.lastStatus ?? "never run")
                    }
                  />{" "}
                  <span class="muted">
                    {j.schedule} · {j.source} · deliver {j.deliver}
                  </span>
                </div>
                <div class="muted">
                  next {j.enabled && j.nextRunAt ? `${fmtAgo(j.nextRunAt)} (${fmtTime(j.nextRunAt)})` : "—"} ·
                  last {fmtAgo(j.lastRunAt)}
                </div>
                {(j.problem || j.lastError) && <div class="error">{j.problem ?? j.lastError}</div>}
                <div class="toolbar">
                  <ActionButton
                    label={`run ${j.id} now`}
                    action={async () => {
                      await gateway.call("cron.run", { id: j.id });
                      jobs.reload();
                    }}
                  >
                    Run now
                  </ActionButton>
                  {j.source === "runtime" && (
                    <>
                      <ActionButton
                        action={async () => {
                          await gateway.call(j.enabled ? "cron.pause" : "cron.resume", { id: j.id });
                          jobs.reload();
                        }}
                      >
                        {j.enabled ? "Pause" : "Resume"}
                      </ActionButton>
                      <ActionButton
                        danger
                        confirm={`Remove the job ${j.id}?`}
                        action={async () => {
                          await gateway.call("cron.remove", { id: j.id });
                          jobs.reload();
                        }}
                      >
                        Remove
                      </ActionButton>
                    </>
                  )}
                  <button
                    type="button"
                    aria-expanded={open === j.id}
                    onClick={() => setOpen(open === j.id ? undefined : j.id)}
                  >
                    Runs
                  </button>
                </div>
                {open === j.id && <Runs id={j.id} />}
              </li>
            ))}
          </ul>
        ) : (
          <Empty>{jobs.loading ? "Loading…" : "No cron jobs."}</Empty>
        )}
      </Card>
      <AddJob onAdded={() => jobs.reload()} />
      <Heartbeat />
    </div>
  );
}

function Runs(props: { id: string }) {
  const runs = useLoad(
    () => gateway.call<{ runs: Run[] }>("cron.runs", { id: props.id, limit: 20 }),
    [props.id],
  );
  useReloadOn(runs, ["cron"]);
  return (
    <div class="runs" data-runs-of={props.id}>
      <ErrorLine error={runs.error} />
      {runs.data?.runs.length ? (
        <Table>
          <thead>
            <tr>
              <th>Started</th>
              <th>Trigger</th>
              <th>Outcome</th>
              <th class="num">Duration</th>
              <th class="num">Tokens</th>
              <th>Output</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.runs.map((r) => (
              <tr key={r.id} class="run" data-status={r.status}>
                <td>
                  <When ms={r.startedAt} />
                </td>
                <td>{r.trigger}</td>
                <td>
                  <Badge state={r.status} /> {r.error}
                </td>
                <td class="num">{fmtDur(r.endedAt != null ? r.endedAt - r.startedAt : null)}</td>
                <td class="num">{fmtInt(r.tokens)}</td>
                <td class="long">{r.outputPreview}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      ) : (
        <Empty>
          {runs.loading
            ? "Loading…"
            : "No runs yet: a run appears here when the schedule fires or you press Run now."}
        </Empty>
      )}
    </div>
  );
}

function AddJob(props: { onAdded(): void }) {
  const [id, setId] = useState("");
  const [kind, setKind] = useState<"cron" | "every" | "at">("cron");
  const [when, setWhen] = useState("");
  const [message, setMessage] = useState("");
  const [deliver, setDeliver] = useState("none");
  return (
    <Card title="Add a runtime job">
      <form class="stack" onSubmit={(e) => e.preventDefault()}>
        <label>
          Id{" "}
          <input
            value={id}
            onInput={(e) => setId(e.currentTarget.value)}
            placeholder="daily-summary"
            required
          />
        </label>
        <label>
          Schedule
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as typeof kind)}>
            <option value="cron">cron expression</option>
            <option value="every">every (e.g. 30m)</option>
            <option value="at">at (ISO time)</option>
          </select>
          <input
            value={when}
            onInput={(e) => setWhen(e.currentTarget.value)}
            placeholder={kind === "cron" ? "0 8 * * *" : kind === "every" ? "30m" : "2026-12-24T18:00:00Z"}
            required
          />
        </label>
        <label>
          Message{" "}
          <textarea value={message} onInput={(e) => setMessage(e.currentTarget.value)} rows={3} required />
        </label>
        <label>
          Deliver to{" "}
          <input
            value={deliver}
            onInput={(e) => setDeliver(e.currentTarget.value)}
            placeholder="none, last or telegram:123"
          />
        </label>
        <ActionButton
          action={async () => {
            await gateway.call("cron.add", {
              job: { id: id.trim(), message, [kind]: when.trim(), deliver: deliver.trim() || "none" },
            });
            setId("");
            setWhen("");
            setMessage("");
            props.onAdded();
          }}
        >
          Add job
        </ActionButton>
      </form>
    </Card>
  );
}

function Heartbeat() {
  const runs = useLoad(() => gateway.call<{ runs: HbRun[] }>("heartbeat.runs", { limit: 20 }), []);
  useReloadOn(runs, ["heartbeat"]);
  return (
    <Card title="Heartbeat ticks" id="heartbeat">
      <ErrorLine error={runs.error} />
      {runs.data?.runs.length ? (
        <Table>
          <thead>
            <tr>
              <th>At</th>
              <th>Outcome</th>
              <th>Called the model</th>
              <th class="num">Tokens</th>
              <th>Delivered</th>
              <th class="num">Duration</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.runs.map((r) => (
              <tr key={r.id}>
                <td>
                  <When ms={r.at} />
                </td>
                <td>
                  <Badge state={r.status} /> {r.reason}
                </td>
                <td>{r.status === "skipped" ? "no" : "yes"}</td>
                <td class="num">{fmtInt(r.tokens)}</td>
                <td>{r.delivered ? "yes" : "no"}</td>
                <td class="num">{fmtDur(r.endedAt != null ? r.endedAt - r.at : null)}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      ) : (
        <Empty>
          {runs.loading
            ? "Loading…"
            : "No heartbeat ticks yet: each tick appears here with whether it called the model."}
        </Empty>
      )}
    </Card>
  );
}
