/**
 * The console's login: the token arrives in the URL fragment of the `familiar dashboard` link
 * (`/console/#token=...`), never in a query string, so it reaches no server log or Referer. It is
 * kept in localStorage under the key the web chat uses, so one login serves both pages, and removed
 * from the address bar at once.
 */
const KEY = "familiar.token";

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

/** Takes `#token=` out of the address bar (storing it) and returns the stored token, if any. */
export function takeTokenFromFragment(): string | undefined {
  const m = /(?:^#|[#&])token=([^&]+)/.exec(location.hash);
  if (m?.[1]) {
    setToken(decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search + "#/overview");
  }
  return getToken();
}

export function getToken(): string | undefined {
  return storage()?.getItem(KEY) ?? undefined;
}

export function setToken(token: string): void {
  storage()?.setItem(KEY, token);
}

export function clearToken(): void {
  storage()?.removeItem(KEY);
}
