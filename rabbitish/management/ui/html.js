// Small rendering helpers that build DOM nodes: every text from the broker (a queue, exchange,
// user, vhost or policy name, a header, a payload) becomes a text node, never markup, so a name
// like <img src=x onerror=alert(1)> shows as those characters. Nothing here parses HTML.
const SVG = "http://www.w3.org/2000/svg";

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function apply(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "checked" || key === "value" || key === "selected") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  return el;
}

// h("a", {href: "#/"}, "text", node, [more]): an element; strings become text nodes; attributes
// named on<event> with a function become listeners; null, undefined and false are skipped.
export function h(tag, attrs, ...children) {
  const el = apply(document.createElement(tag), attrs);
  append(el, children);
  return el;
}

function s(tag, attrs, ...children) {
  const el = apply(document.createElementNS(SVG, tag), attrs);
  append(el, children);
  return el;
}

// Replace what `el` holds with `children` (same rules as h()).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export const $ = (root, css) => root.querySelector(css);

export function num(value) {
  if (value === undefined || value === null || value === "") return "";
  return Number(value).toLocaleString("en-US");
}

export function rate(value) {
  if (value === undefined || value === null) return "";
  return `${Number(value).toFixed(1)}/s`;
}

export function age(seconds) {
  if (seconds === undefined || seconds === null) return "";
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

export function json(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "object" && Object.keys(value).length === 0) return "";
  return JSON.stringify(value);
}

// A map (arguments, a policy definition) as tags "key: value".
export function args(value) {
  if (!value || Object.keys(value).length === 0) return [];
  return Object.entries(value).map(([k, v]) => [h("span", { class: "tag" }, `${k}: ${JSON.stringify(v)}`), " "]);
}

export const none = (text = "none") => h("span", { class: "muted" }, text);

// pairs: [[label, value]] with value a node, a string or undefined (the row is left out).
export function props(pairs) {
  return h("dl", { class: "props" }, pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

export function link(hash, text) {
  return h("a", { href: hash }, text);
}

export function button(text, attrs = {}) {
  return h("button", { type: "button", ...attrs }, text);
}

// A form's labelled input: [label, input] for a two-column form.panel.
export function field(label, id, attrs = {}, tag = "input") {
  return [h("label", { for: id }, label), h(tag, { id, ...attrs })];
}

export function options(values, selected) {
  return values.map(([value, label]) => h("option", { value, selected: value === selected }, label));
}

// A result line next to a form's button: ok or error text.
export function say(el, ok, text) {
  el.className = ok ? "ok" : "error";
  el.textContent = text;
}

// columns: [{key, label, num, cls, cell(row) -> node | string | array, value(row)}];
// sort: {key, desc} or null.
export function table(columns, rows, sort, id) {
  const head = columns.map((c) => {
    const classes = [c.num ? "num" : "", c.key ? "sortable" : ""];
    if (sort && c.key === sort.key) classes.push(sort.desc ? "sorted-desc" : "sorted-asc");
    return h("th", { class: classes.join(" ").trim(), dataset: c.key ? { sort: c.key } : undefined }, c.label);
  });
  const body = rows.length
    ? rows.map((row) => h("tr", {}, columns.map((c) => h("td", { class: [c.num ? "num" : "", c.cls || ""].join(" ").trim() }, c.cell(row)))))
    : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, "None"));
  return h("table", { id }, h("thead", {}, h("tr", {}, head)), h("tbody", {}, body));
}

export function sorted(columns, rows, sort) {
  if (!sort) return rows;
  const column = columns.find((c) => c.key === sort.key);
  if (!column) return rows;
  const value = column.value || ((row) => row[sort.key]);
  const out = [...rows].sort((a, b) => {
    const x = value(a), y = value(b);
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x ?? "").localeCompare(String(y ?? ""));
  });
  return sort.desc ? out.reverse() : out;
}

// Clicking a sortable header flips or sets the sort, then calls redraw().
export function onSort(container, state, redraw) {
  container.addEventListener("click", (event) => {
    const th = event.target.closest("th[data-sort]");
    if (!th) return;
    const key = th.dataset.sort;
    state.sort = state.sort && state.sort.key === key ? { key, desc: !state.sort.desc } : { key, desc: false };
    redraw();
  });
}

function points(values, step, height, max, pad) {
  return values.map((v, i) => `${(i * step).toFixed(1)},${(height - pad / 2 - (v / max) * (height - pad)).toFixed(1)}`).join(" ");
}

export function sparkline(values, width = 80, height = 18) {
  const svg = s("svg", { class: "spark", width, height, viewBox: `0 0 ${width} ${height}` });
  if (!values || values.length < 2) return svg;
  const max = Math.max(...values, 1);
  svg.append(s("polyline", { points: points(values, width / (values.length - 1), height, max, 2) }));
  return svg;
}

const round1 = (v) => num(Math.round(v * 10) / 10);

// A few series on one chart: [{label, color, values, unit}]; the legend gives each one's latest
// value. `id` names the wrapper (tests find the chart by it).
export function chart(series, id, width = 600, height = 120) {
  const all = series.flatMap((x) => x.values);
  const max = Math.max(...all, 1);
  const length = Math.max(...series.map((x) => x.values.length), 2);
  const step = width / (length - 1);
  const top = max * 1.15; // some room above the highest line
  const svg = s("svg", { class: "chart", width: "100%", height, viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none" },
    series.filter((x) => x.values.length > 1).map((x) => s("polyline", { points: points(x.values, step, height, top, 4), stroke: x.color, dataset: { series: x.label } })));
  const legend = series.map((x) => h("span", { class: "legend" }, h("span", { style: `color:${x.color}` }, "\u25A0"), ` ${x.label} `,
    h("span", { class: "latest", dataset: { series: x.label } }, x.values.length ? `${round1(x.values[x.values.length - 1])}${x.unit || ""}` : "")));
  return h("div", { class: "chart-box", id }, svg, h("div", { class: "muted" }, legend, ` (max ${round1(max)})`));
}
