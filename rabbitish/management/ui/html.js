// Small rendering helpers: escaping, numbers, tables with sortable headers, sparklines.
export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

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
  return esc(JSON.stringify(value));
}

export function args(value) {
  if (!value || Object.keys(value).length === 0) return "";
  return Object.entries(value).map(([k, v]) => `<span class="tag">${esc(k)}: ${esc(JSON.stringify(v))}</span>`).join(" ");
}

export function props(pairs) {
  return `<dl class="props">${pairs.filter(([, v]) => v !== undefined).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("")}</dl>`;
}

export function link(hash, text) {
  return `<a href="${esc(hash)}">${esc(text)}</a>`;
}

// columns: [{key, label, num, html(row), value(row)}]; sort: {key, desc} or null.
export function table(columns, rows, sort, attrs = "") {
  const head = columns.map((c) => {
    const classes = [c.num ? "num" : "", c.key ? "sortable" : ""];
    if (sort && c.key === sort.key) classes.push(sort.desc ? "sorted-desc" : "sorted-asc");
    return `<th class="${classes.join(" ")}" ${c.key ? `data-sort="${esc(c.key)}"` : ""}>${esc(c.label)}</th>`;
  }).join("");
  const body = rows.length
    ? rows.map((row) => `<tr>${columns.map((c) => `<td class="${c.num ? "num" : ""} ${c.cls || ""}">${c.html(row)}</td>`).join("")}</tr>`).join("")
    : `<tr><td colspan="${columns.length}" class="muted">None</td></tr>`;
  return `<table ${attrs}><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
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

export function sparkline(values, width = 80, height = 18) {
  if (!values || values.length < 2) return `<svg class="spark" width="${width}" height="${height}"></svg>`;
  const max = Math.max(...values, 1);
  const step = width / (values.length - 1);
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 1 - (v / max) * (height - 2)).toFixed(1)}`).join(" ");
  return `<svg class="spark" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><polyline points="${points}"/></svg>`;
}

// A few series on one chart: [{label, color, values}].
export function chart(series, width = 600, height = 120) {
  const all = series.flatMap((s) => s.values);
  const max = Math.max(...all, 1);
  const length = Math.max(...series.map((s) => s.values.length), 2);
  const step = width / (length - 1);
  const lines = series.map((s) => {
    const points = s.values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`).join(" ");
    return `<polyline points="${points}" stroke="${s.color}"/>`;
  }).join("");
  const legend = series.map((s) => `<span style="color:${s.color}">&#9632;</span> ${esc(s.label)} ${s.values.length ? esc(num(Math.round(s.values[s.values.length - 1] * 10) / 10)) : ""}`).join(" &nbsp; ");
  return `<svg class="chart" width="100%" height="${height}" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none" style="border:1px solid var(--line)">${lines}</svg><div class="muted">${legend} <span>(max ${esc(num(Math.round(max * 10) / 10))})</span></div>`;
}
