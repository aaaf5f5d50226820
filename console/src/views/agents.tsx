/** Agents: each agent's model, tools, source and file; the templates to create one from. */
import { useState } from "preact/hooks";
import { api } from "../gateway";
import { useLoad } from "../hooks";
import { ActionButton, Badge, Card, Empty, ErrorLine, Table } from "../ui";

interface Agent {
  id: string;
  source: string;
  path?: string;
  editable: boolean;
  description?: string;
  model?: string;
  engine?: string;
  tools?: { allow?: string[]; deny?: string[] } | string[];
}
interface Template {
  id: string;
  name: string;
  description: string;
  tools?: string[];
}

function toolsText(t: Agent["tools"]): string {
  if (!t) return "all built-in tools";
  if (Array.isArray(t)) return t.join(", ") || "none";
  const parts = [];
  if (t.allow) parts.push(`only ${t.allow.join(", ")}`);
  if (t.deny?.length) parts.push(`not ${t.deny.join(", ")}`);
  return parts.join("; ") || "all built-in tools";
}

export function Agents() {
  const agents = useLoad(() => api<{ default: string; agents: Agent[] }>("/api/agents?limit=500"), []);
  const templates = useLoad(() => api<{ templates: Template[] }>("/api/agent-templates"), []);
  const [names, setNames] = useState<Record<string, string>>({});
  return (
    <div class="grid">
      <Card title="Agents" id="agents">
        <ErrorLine error={agents.error} />
        {agents.data ? (
          <Table>
            <thead>
              <tr>
                <th>Agent</th>
                <th>Model</th>
                <th>Tools</th>
                <th>Source</th>
                <th>File</th>
              </tr>
            </thead>
            <tbody>
              {agents.data.agents.map((a) => (
                <tr key={a.id} data-agent={a.id}>
                  <td>
                    <strong>{a.id}</strong>{" "}
                    {a.id === agents.data!.default && <Badge state="ok">default</Badge>}
                    {a.description && <div class="muted">{a.description}</div>}
                  </td>
                  <td>
                    <code>
                      {a.engine && a.engine !== "model" ? `${a.engine} engine` : (a.model ?? "primary model")}
                    </code>
                  </td>
                  <td>{toolsText(a.tools)}</td>
                  <td>{a.source}</td>
                  <td>
                    {a.path ? (
                      <code>{a.path}</code>
                    ) : a.source === "config" ? (
                      "config.yaml"
                    ) : a.source === "api" ? (
                      "SQLite (API)"
                    ) : (
                      "built in"
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        ) : (
          <Empty>Loading…</Empty>
        )}
      </Card>
      <Card title="Templates" id="templates">
        <ErrorLine error={templates.error} />
        {templates.data?.templates.length ? (
          <ul class="rows">
            {templates.data.templates.map((t) => (
              <li key={t.id}>
                <strong>{t.name}</strong> <span class="muted">{t.id}</span>
                <div>{t.description}</div>
                <form class="inline" onSubmit={(e) => e.preventDefault()}>
                  <label for={`tpl-${t.id}`}>New agent id</label>
                  <input
                    id={`tpl-${t.id}`}
                    value={names[t.id] ?? ""}
                    placeholder={t.id}
                    onInput={(e) => setNames({ ...names, [t.id]: e.currentTarget.value })}
                  />
                  <ActionButton
                    action={async () => {
                      const name = names[t.id]?.trim();
                      await api("/api/agents/from-template", {
                        method: "POST",
                        body: { templateId: t.id, ...(name ? { name } : {}) },
                      });
                      agents.reload();
                    }}
                  >
                    Create
                  </ActionButton>
                </form>
              </li>
            ))}
          </ul>
        ) : (
          <Empty>{templates.loading ? "Loading…" : "No templates."}</Empty>
        )}
      </Card>
    </div>
  );
}
