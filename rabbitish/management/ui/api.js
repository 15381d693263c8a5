// The JSON API seen from the page: credentials kept in localStorage (as RabbitMQ's UI keeps
// them), HTTP basic auth on every call, errors as exceptions carrying the API's reason.
const KEY = "rabbitish.credentials";

export class AuthError extends Error {}

export function credentials() {
  return localStorage.getItem(KEY);
}

export function remember(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  localStorage.setItem(KEY, btoa(String.fromCharCode(...bytes)));
}

export function forget() {
  localStorage.removeItem(KEY);
}

export async function call(method, path, body) {
  const headers = { Authorization: `Basic ${credentials() || ""}` };
  // credentials "omit": a refused login comes back as a 401 to show, never the browser's own
  // password prompt (the API sends WWW-Authenticate, as RabbitMQ's does); the Authorization
  // header is still sent.
  const init = { method, headers, credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`api${path}`, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (err) {
    data = text;
  }
  // A refused login ("not_authorized", or no body) asks for another; a refused resource
  // ("not_authorised": not an administrator, no access to the vhost) is an error on the page.
  if (response.status === 401 && !(data && data.error === "not_authorised")) throw new AuthError("Login failed");
  if (!response.ok) {
    const reason = data && (data.reason || data.error);
    throw new Error(`${response.status} ${typeof reason === "string" ? reason : JSON.stringify(reason || response.statusText)}`);
  }
  return data;
}

export const get = (path) => call("GET", path);

// One path segment: vhosts and names percent-encoded ("/" is %2F).
export const seg = (text) => encodeURIComponent(text);
