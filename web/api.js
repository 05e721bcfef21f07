// Talks to tierflowd's REST API (DESIGN 2.4). The page is served by tierflowd
// itself, so every URL is relative to the page's origin. Errors come back as
// ApiError with the HTTP status (0 when the controller could not be reached)
// and the controller's {"error": {"code", "message"}} when it sent one.

const BASE = 'api/v1/';
const TOKEN_KEY = 'tierflow.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, { token, timeoutMs = 5000 } = {}) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(BASE + path, { method, headers, signal: ctl.signal, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'unreachable', e.name === 'AbortError' ? 'request timed out' : 'controller unreachable');
  } finally {
    clearTimeout(timer);
  }
  let body = null;
  const text = await res.text();
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!res.ok) {
    const err = body && body.error ? body.error : {};
    throw new ApiError(res.status, err.code || `http_${res.status}`, err.message || `${res.status} ${res.statusText}`);
  }
  if (body === null) throw new ApiError(res.status, 'bad_json', `${path}: response is not JSON`);
  return body;
}

export const get = (path) => call('GET', path);
export const post = (path, token) => call('POST', path, { token, timeoutMs: 20000 });

export function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v != null && v !== '') s.set(k, v);
  const t = s.toString();
  return t ? `?${t}` : '';
}

// The token lives in sessionStorage only: it is gone when the tab closes and
// is never written to localStorage or a cookie.
export function savedToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}
export function saveToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token is simply not remembered */ }
}
