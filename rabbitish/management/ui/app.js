// The page's frame: login, hash routing (#/queues/%2F/name ...), and the live refresh that
// re-reads the JSON API every few seconds and redraws only the live parts of the page.
import { AuthError, credentials, forget, get, remember } from "./api.js";
import { permissions, user, users, vhosts } from "./admin.js";
import { fill, h } from "./html.js";
import { connections, exchanges, overview, queues, transactions } from "./lists.js";
import { connection, exchange, queue } from "./objects.js";
import { policies } from "./policies.js";
import { loadVhosts, onChange } from "./scope.js";

const ROUTES = [
  [/^#?\/?$/, overview, "overview"],
  [/^#\/queues\/?$/, queues, "queues"],
  [/^#\/queues\/([^/]+)\/([^/]+)$/, queue, "queues"],
  [/^#\/exchanges\/?$/, exchanges, "exchanges"],
  [/^#\/exchanges\/([^/]+)\/([^/]+)$/, exchange, "exchanges"],
  [/^#\/(?:connections|channels)\/?$/, connections, "connections"],
  [/^#\/connections\/([^/]+)$/, connection, "connections"],
  [/^#\/transactions\/?$/, transactions, "transactions"],
  [/^#\/users\/?$/, users, "admin"],
  [/^#\/users\/([^/]+)$/, user, "admin"],
  [/^#\/vhosts\/?$/, vhosts, "admin"],
  [/^#\/permissions\/?$/, permissions, "admin"],
  [/^#\/policies\/?$/, policies, "policies"],
];

const page = document.getElementById("page");
const loginForm = document.getElementById("login");
const status = document.getElementById("status");
let current = null; // {view, params}
let timer = null;
let generation = 0; // bumps at each navigation, so a late answer never draws on a new page

function route() {
  const hash = window.location.hash || "#/";
  for (const [pattern, view, tab] of ROUTES) {
    const match = hash.match(pattern);
    if (match) {
      return { view, params: match.slice(1).map(decodeURIComponent), tab };
    }
  }
  return { view: null, params: [], tab: "" };
}

async function refresh() {
  if (!current || !current.view) return;
  const mine = generation;
  try {
    await current.view.update(current.root, current.params);
    if (mine === generation) {
      status.textContent = "";
      document.body.dataset.updated = String(Date.now());
    }
  } catch (err) {
    if (mine !== generation) return;
    if (err instanceof AuthError) return showLogin("Login failed");
    status.textContent = err.message;
  }
}

function schedule() {
  if (timer) clearInterval(timer);
  const seconds = Number(document.getElementById("refresh").value);
  timer = seconds > 0 ? setInterval(refresh, seconds * 1000) : null;
}

async function navigate() {
  if (!credentials()) return showLogin("");
  generation += 1;
  const mine = generation;
  const found = route();
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === found.tab);
  current = null;
  status.textContent = "";
  if (!found.view) {
    fill(page, h("h1", {}, "Not found"), h("p", {}, `No page at ${window.location.hash}.`));
    return;
  }
  try {
    await loadVhosts(); // the selector and the forms' vhost lists as they are now
  } catch (err) {
    if (err instanceof AuthError) return showLogin("Login failed");
    status.textContent = err.message;
  }
  if (mine !== generation) return; // navigated on meanwhile
  // Each visit draws into a fresh element: a late answer for the page left draws into a
  // detached one, never over this page.
  found.root = h("div", { class: "view" });
  page.replaceChildren(found.root);
  found.view.mount(found.root, found.params);
  current = found;
  refresh();
}

function showLogin(message) {
  generation += 1;
  current = null;
  page.replaceChildren();
  loginForm.hidden = false;
  document.getElementById("login-error").textContent = message;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById(document.getElementById("username").value ? "password" : "username").focus();
}

loginForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  remember(document.getElementById("username").value, document.getElementById("password").value);
  try {
    await start();
  } catch (err) {
    forget();
    showLogin(err instanceof AuthError ? "Login failed" : err.message);
  }
});

document.getElementById("logout").addEventListener("click", () => {
  forget();
  showLogin("");
});

async function start() {
  const who = await get("/whoami");
  loginForm.hidden = true;
  document.getElementById("who").textContent = `User ${who.name}`;
  // The admin pages' links only for administrators (the API refuses the others anyway).
  document.body.classList.toggle("admin", (who.tags || []).includes("administrator"));
  document.getElementById("logout").hidden = false;
  navigate();
}

window.addEventListener("hashchange", navigate);
document.getElementById("refresh").addEventListener("change", schedule);
onChange(navigate);
schedule();
if (credentials()) {
  start().catch((err) => showLogin(err instanceof AuthError ? "Login failed" : err.message));
} else {
  showLogin("");
}
