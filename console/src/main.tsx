/**
 * The owner's console: a single page served by the gateway at /console/. Login comes from the
 * `familiar dashboard` link (#token=...) or a pasted token; every view reads the daemon through the
 * gateway websocket and /api with that token.
 */
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { clearToken, getToken, setToken, takeTokenFromFragment } from "./auth";
import { gateway } from "./gateway";
import { useConnState, useEvents, useLoad, usePoll, useReloadOn, useRoute } from "./hooks";
import "./styles.css";
import { Agents } from "./views/agents";
import { Approvals } from "./views/approvals";
import { Cron } from "./views/cron";
import { Logs } from "./views/logs";
import { Memory } from "./views/memory";
import { Overview } from "./views/overview";
import { SessionView } from "./views/session-view";
import { Sessions } from "./views/sessions";
import { Traces } from "./views/traces";
import { Usage } from "./views/usage";

const VIEWS: [string, string][] = [
  ["overview", "Overview"],
  ["usage", "Usage"],
  ["sessions", "Sessions"],
  ["traces", "Traces"],
  ["memory", "Memory"],
  ["cron", "Cron"],
  ["approvals", "Approvals"],
  ["agents", "Agents"],
  ["logs", "Logs"],
];

function Login(props: { reason: string }) {
  const [value, setValue] = useState("");
  return (
    <main class="login">
      <form
        class="card stack"
        onSubmit={(e) => {
          e.preventDefault();
          setToken(value.trim());
          gateway.reconnect();
        }}
      >
        <h1>Familiar console</h1>
        <p>
          Open the link <code>familiar dashboard</code> prints, or paste the gateway token. It is kept in this
          browser only.
        </p>
        {props.reason && getToken() && (
          <p class="error" role="alert" id="login-error">
            {props.reason}
          </p>
        )}
        <label>
          Gateway token{" "}
          <input
            id="token"
            type="password"
            autocomplete="current-password"
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Log in</button>
      </form>
    </main>
  );
}

function App() {
  const conn = useConnState();
  const route = useRoute();
  const [pending, setPending] = useState(false);
  const [navOpen, setNavOpen] = useState(false);
  // A rejected config edit is worth a dot in the navigation from any view.
  useEvents(["config.error", "config.reloaded"], (e) => setPending(e === "config.error"));
  // Approvals waiting for the owner, counted in the menu from any view (no event announces them).
  const waiting = useLoad(
    () => gateway.call<{ approvals: unknown[] }>("approvals.list").then((r) => r.approvals.length),
    [],
  );
  usePoll(waiting, 5000);
  useReloadOn(waiting, ["chat"]);
  const [view = "overview", a, b] = route;
  // Keyboard and screen-reader users land on the new view's content, not back at the top of the menu.
  const mainRef = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else mainRef.current?.focus();
  }, [view, a, b]);
  if (conn === "unauthorized") return <Login reason={gateway.lastError} />;
  let body;
  switch (view) {
    case "usage":
      body = <Usage />;
      break;
    case "sessions":
      body = a && b ? <SessionView agent={a} id={b} /> : <Sessions />;
      break;
    case "traces":
      body = <Traces id={a} />;
      break;
    case "memory":
      body = <Memory />;
      break;
    case "cron":
      body = <Cron />;
      break;
    case "approvals":
      body = <Approvals />;
      break;
    case "agents":
      body = <Agents />;
      break;
    case "logs":
      body = <Logs />;
      break;
    default:
      body = <Overview />;
  }
  return (
    <>
      <header class="top">
        <a class="skip" href="#main">
          Skip to content
        </a>
        <button
          type="button"
          class="menu"
          aria-expanded={navOpen}
          aria-controls="nav"
          onClick={() => setNavOpen(!navOpen)}
        >
          ☰ <span class="sr">Menu</span>
        </button>
        <strong class="brand">Familiar</strong>
        <span class={`conn ${conn}`} id="conn" data-state={conn} title={`gateway: ${conn}`}>
          {conn === "open" ? "live" : conn}
        </span>
        <a class="chat-link" href="/">
          Chat ↗
        </a>
        <button
          type="button"
          class="logout"
          onClick={() => {
            clearToken();
            gateway.reconnect();
          }}
        >
          Log out
        </button>
      </header>
      <div class="layout">
        <nav id="nav" class={navOpen ? "side open" : "side"} aria-label="console">
          {VIEWS.map(([id, label]) => (
            <a
              key={id}
              href={`#/${id}`}
              aria-current={view === id ? "page" : undefined}
              onClick={() => setNavOpen(false)}
            >
              {label}
              {id === "overview" && pending && <span class="dot" aria-label="config error" />}
              {id === "approvals" && !!waiting.data && (
                <span class="count" aria-label={`${waiting.data} waiting`}>
                  {waiting.data}
                </span>
              )}
            </a>
          ))}
          <button
            type="button"
            class="nav-logout"
            onClick={() => {
              clearToken();
              gateway.reconnect();
            }}
          >
            Log out
          </button>
        </nav>
        <main id="main" ref={mainRef} tabIndex={-1} data-view={view}>
          <h1 class="view-title">{VIEWS.find(([id]) => id === view)?.[1] ?? "Overview"}</h1>
          {body}
        </main>
      </div>
    </>
  );
}

takeTokenFromFragment();
gateway.connect();
render(<App />, document.getElementById("app")!);
