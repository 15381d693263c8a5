// The header's vhost selector: "All" or one vhost, as RabbitMQ's UI scopes its lists. The choice
// is kept in localStorage; list pages ask the API for the chosen vhost's objects only.
import { get, seg } from "./api.js";
import { fill, h, options } from "./html.js";

const KEY = "rabbitish.vhost";
const select = document.getElementById("vhost");
let names = []; // the vhosts the user may see, as last read

export function current() {
  return localStorage.getItem(KEY) || "";
}

// "/queues" -> "/queues" (all) or "/queues/{vhost}".
export function scoped(path) {
  return current() ? `${path}/${seg(current())}` : path;
}

// "connections" -> "/connections" (all) or "/vhosts/{vhost}/connections".
export function underVhost(resource) {
  return current() ? `/vhosts/${seg(current())}/${resource}` : `/${resource}`;
}

export const vhostNames = () => names;

// Re-read the vhosts and redraw the selector; a chosen vhost that is gone falls back to all.
export async function loadVhosts() {
  names = (await get("/vhosts")).map((v) => v.name);
  if (current() && !names.includes(current())) localStorage.removeItem(KEY);
  fill(select, h("option", { value: "" }, "All"), options(names.map((n) => [n, n]), current()));
  select.value = current();
  return names;
}

export function onChange(callback) {
  select.addEventListener("change", () => {
    if (select.value) localStorage.setItem(KEY, select.value);
    else localStorage.removeItem(KEY);
    callback();
  });
}

// A <select> of the vhosts for a form, on the chosen vhost (or "/" when all are shown).
export function vhostField(id, label = "Virtual host") {
  const preferred = current() || (names.includes("/") ? "/" : names[0]);
  return [h("label", { for: id }, label), h("select", { id }, options(names.map((n) => [n, n]), preferred))];
}
