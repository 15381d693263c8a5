// The list pages: overview, queues, exchanges, connections and channels, transactions. Each
// view's mount() draws what stays (headings, filters, forms); update() fetches and redraws the
// live parts, so a refresh never loses what the user typed.
import { call, get, seg } from "./api.js";
import { age, args, chart, esc, link, num, onSort, rate, sorted, sparkline, table } from "./html.js";

const HISTORY = 40; // samples kept per sparkline
const depths = new Map(); // "vhost\0queue" -> recent depths

export function recordDepth(queue) {
  const key = `${queue.vhost}\0${queue.name}`;
  const values = depths.get(key) || [];
  values.push(queue.messages || 0);
  if (values.length > HISTORY) values.shift();
  depths.set(key, values);
  return values;
}

export const queueHash = (q) => `#/queues/${seg(q.vhost)}/${seg(q.name)}`;
export const exchangeHash = (vhost, name) => `#/exchanges/${seg(vhost)}/${seg(name || "amq.default")}`;

// ---------------------------------------------------------------------- overview
const overviewSeries = { ready: [], unacked: [], publish: [], deliver: [], ack: [] };
let lastCounters = null;

function push(values, value) {
  values.push(value);
  if (values.length > HISTORY) values.shift();
}

export const overview = {
  mount(root) {
    root.innerHTML = `<h1>Overview</h1><div id="overview-totals" class="totals"></div>
      <div class="cols"><section><h2>Queued messages</h2><div id="overview-queued"></div></section>
      <section><h2>Message rates</h2><div id="overview-rates"></div></section></div>
      <h2>Connections</h2><div id="overview-connections"></div>
      <h2>Node</h2><div id="overview-node"></div>`;
  },
  async update(root) {
    const [o, connections] = await Promise.all([get("/overview"), get("/connections")]);
    const t = o.object_totals || {}, q = o.queue_totals || {}, s = o.message_stats || {};
    const now = Date.now() / 1000;
    let rates = { publish: 0, deliver: 0, ack: 0 };
    if (lastCounters && now > lastCounters.at) {
      const dt = now - lastCounters.at;
      rates = {
        publish: Math.max(0, (s.publish - lastCounters.publish) / dt),
        deliver: Math.max(0, (s.deliver_get - lastCounters.deliver) / dt),
        ack: Math.max(0, (s.ack - lastCounters.ack) / dt),
      };
    }
    lastCounters = { at: now, publish: s.publish || 0, deliver: s.deliver_get || 0, ack: s.ack || 0 };
    push(overviewSeries.ready, q.messages_ready || 0);
    push(overviewSeries.unacked, q.messages_unacknowledged || 0);
    push(overviewSeries.publish, rates.publish);
    push(overviewSeries.deliver, rates.deliver);
    push(overviewSeries.ack, rates.ack);
    const total = (id, label, value) => `<div class="total" id="${id}"><div class="value">${esc(num(value))}</div><div class="label">${esc(label)}</div></div>`;
    root.querySelector("#overview-totals").innerHTML = [
      total("total-messages", "Messages", q.messages), total("total-ready", "Ready", q.messages_ready),
      total("total-unacked", "Unacked", q.messages_unacknowledged), total("total-connections", "Connections", t.connections),
      total("total-channels", "Channels", t.channels), total("total-queues", "Queues", t.queues),
      total("total-exchanges", "Exchanges", t.exchanges), total("total-consumers", "Consumers", t.consumers),
    ].join("");
    root.querySelector("#overview-queued").innerHTML = chart([
      { label: "Ready", color: "#e6a700", values: overviewSeries.ready },
      { label: "Unacked", color: "#1f6fb2", values: overviewSeries.unacked },
    ]);
    root.querySelector("#overview-rates").innerHTML = chart([
      { label: "Publish/s", color: "#f60", values: overviewSeries.publish },
      { label: "Deliver/s", color: "#2a9d3a", values: overviewSeries.deliver },
      { label: "Ack/s", color: "#7a4bc2", values: overviewSeries.ack },
    ]) + `<p class="muted">Counted by the queues present: ${esc(num(s.publish))} published, ${esc(num(s.deliver_get))} delivered, ${esc(num(s.ack))} acknowledged.</p>`;
    root.querySelector("#overview-connections").innerHTML = table(connectionColumns, connections, null);
    const listeners = (o.listeners || []).map((l) => `${l.protocol} ${l.ip_address}:${l.port}`).join(", ");
    root.querySelector("#overview-node").innerHTML = `<p>${esc(o.product_name)} ${esc(o.product_version)} (speaks RabbitMQ ${esc(o.rabbitmq_version)}) &middot; node ${esc(o.node)} &middot; listeners: ${esc(listeners)} &middot; <a href="metrics">Prometheus metrics</a></p>`;
  },
};

// ---------------------------------------------------------------------- queues
const queueState = { sort: { key: "name", desc: false }, filter: "", data: [] };
const queueColumns = [
  { key: "vhost", label: "Virtual host", html: (q) => esc(q.vhost) },
  { key: "name", label: "Name", cls: "queue-name", html: (q) => link(queueHash(q), q.name) },
  { key: "type", label: "Type", html: (q) => esc(q.type) },
  { key: "features", label: "Features", value: features, html: (q) => esc(features(q)) + (q.policy ? ` <span class="tag">policy: ${esc(q.policy)}</span>` : "") },
  { key: "messages_ready", label: "Ready", num: true, cls: "ready", html: (q) => esc(num(q.messages_ready)) },
  { key: "messages_unacknowledged", label: "Unacked", num: true, cls: "unacked", html: (q) => esc(num(q.messages_unacknowledged)) },
  { key: "messages", label: "Total", num: true, cls: "messages", html: (q) => esc(num(q.messages)) },
  { label: "Depth", html: (q) => sparkline(depths.get(`${q.vhost}\0${q.name}`)) },
  { key: "consumers", label: "Consumers", num: true, html: (q) => esc(num(q.consumers)) },
  { key: "publish_rate", label: "Incoming", num: true, value: (q) => stat(q, "publish"), html: (q) => esc(rate(stat(q, "publish"))) },
  { key: "deliver_rate", label: "Deliver / get", num: true, value: (q) => stat(q, "deliver_get"), html: (q) => esc(rate(stat(q, "deliver_get"))) },
  { key: "ack_rate", label: "Ack", num: true, value: (q) => stat(q, "ack"), html: (q) => esc(rate(stat(q, "ack"))) },
];

function stat(q, name) {
  const d = (q.message_stats || {})[`${name}_details`];
  return d ? d.rate : 0;
}

function features(q) {
  const f = [];
  if (q.durable) f.push("D");
  if (q.auto_delete) f.push("AD");
  if (q.exclusive) f.push("Excl");
  if (q.arguments && Object.keys(q.arguments).length) f.push("Args");
  return f.join(" ");
}

function drawQueues(root) {
  const needle = queueState.filter.toLowerCase();
  const rows = queueState.data.filter((q) => q.name.toLowerCase().includes(needle));
  root.querySelector("#queues-table").innerHTML = table(queueColumns, sorted(queueColumns, rows, queueState.sort), queueState.sort, 'id="queues"');
  root.querySelector("#queues-count").textContent = `${rows.length} of ${queueState.data.length}`;
}

export const queues = {
  mount(root) {
    root.innerHTML = `<h1>Queues <span id="queues-count" class="muted"></span></h1>
      <div class="filter"><label>Filter <input id="queue-filter" type="search" placeholder="name contains" value="${esc(queueState.filter)}"></label></div>
      <div id="queues-table"></div>
      <h2>Add a queue</h2>
      <form id="add-queue" class="panel"><label for="new-queue-vhost">Virtual host</label><input id="new-queue-vhost" value="/">
        <label for="new-queue-name">Name</label><input id="new-queue-name" required>
        <label for="new-queue-durable">Durable</label><input id="new-queue-durable" type="checkbox" checked>
        <label for="new-queue-args">Arguments (JSON)</label><input id="new-queue-args" placeholder='{"x-max-length": 1000}'>
        <div class="actions"><button type="submit">Add queue</button> <span id="add-queue-result"></span></div></form>`;
    root.querySelector("#queue-filter").addEventListener("input", (e) => { queueState.filter = e.target.value; drawQueues(root); });
    onSort(root.querySelector("#queues-table"), queueState, () => drawQueues(root));
    root.querySelector("#add-queue").addEventListener("submit", async (e) => {
      e.preventDefault();
      const out = root.querySelector("#add-queue-result");
      try {
        const raw = root.querySelector("#new-queue-args").value.trim();
        const body = { durable: root.querySelector("#new-queue-durable").checked, arguments: raw ? JSON.parse(raw) : {} };
        await call("PUT", `/queues/${seg(root.querySelector("#new-queue-vhost").value)}/${seg(root.querySelector("#new-queue-name").value)}`, body);
        out.className = "ok"; out.textContent = "Queue declared.";
        await queues.update(root);
      } catch (err) { out.className = "error"; out.textContent = err.message; }
    });
  },
  async update(root) {
    queueState.data = await get("/queues");
    queueState.data.forEach(recordDepth);
    drawQueues(root);
  },
};

// ---------------------------------------------------------------------- exchanges
const exchangeState = { sort: { key: "name", desc: false }, data: [] };
const exchangeColumns = [
  { key: "vhost", label: "Virtual host", html: (x) => esc(x.vhost) },
  { key: "name", label: "Name", html: (x) => link(exchangeHash(x.vhost, x.name), x.name || "(AMQP default)") },
  { key: "type", label: "Type", html: (x) => esc(x.type) },
  { key: "features", label: "Features", value: (x) => `${x.durable ? "D" : ""}${x.auto_delete ? "AD" : ""}${x.internal ? "I" : ""}`, html: (x) => esc([x.durable && "D", x.auto_delete && "AD", x.internal && "I"].filter(Boolean).join(" ")) + " " + args(x.arguments) },
  { key: "bindings", label: "Bindings out", num: true, html: (x) => esc(num(x.bindings)) },
];

export const exchanges = {
  mount(root) {
    root.innerHTML = `<h1>Exchanges</h1><div id="exchanges-table"></div>`;
    onSort(root.querySelector("#exchanges-table"), exchangeState, () => draw());
    const draw = () => {
      root.querySelector("#exchanges-table").innerHTML = table(exchangeColumns, sorted(exchangeColumns, exchangeState.data, exchangeState.sort), exchangeState.sort, 'id="exchanges"');
    };
    exchangeState.draw = draw;
  },
  async update() {
    const [list, bindings] = await Promise.all([get("/exchanges"), get("/bindings")]);
    const counts = new Map();
    for (const b of bindings) counts.set(`${b.vhost}\0${b.source}`, (counts.get(`${b.vhost}\0${b.source}`) || 0) + 1);
    exchangeState.data = list.map((x) => ({ ...x, bindings: counts.get(`${x.vhost}\0${x.name}`) || 0 }));
    exchangeState.draw();
  },
};

// ---------------------------------------------------------------------- connections, channels
const connectionColumns = [
  { key: "name", label: "Name", html: (c) => esc(c.name) },
  { key: "user", label: "User", html: (c) => esc(c.user) },
  { key: "vhost", label: "Virtual host", html: (c) => esc(c.vhost) },
  { key: "protocol", label: "Protocol", html: (c) => esc(c.protocol) },
  { key: "client", label: "Client", value: client, html: (c) => esc(client(c)) },
  { key: "channels", label: "Channels", num: true, html: (c) => esc(num(c.channels)) },
  { key: "state", label: "State", html: (c) => esc(c.state) },
];

function client(c) {
  const p = c.client_properties || {};
  return [p.connection_name, p.product, p.version].filter(Boolean).join(" ");
}

const channelColumns = [
  { key: "name", label: "Channel", html: (c) => esc(c.name) },
  { key: "user", label: "User", html: (c) => esc(c.user) },
  { key: "mode", label: "Mode", value: mode, html: (c) => mode(c).split("").map((m) => `<span class="tag ${m === "T" ? "tx" : ""}" title="${m === "T" ? "transactional" : "confirm"}">${m}</span>`).join("") },
  { key: "prefetch_count", label: "Prefetch", num: true, html: (c) => esc(num(c.prefetch_count)) },
  { key: "consumer_count", label: "Consumers", num: true, html: (c) => esc(num(c.consumer_count)) },
  { key: "messages_unacknowledged", label: "Unacked", num: true, html: (c) => esc(num(c.messages_unacknowledged)) },
  { key: "messages_uncommitted", label: "Uncommitted msgs", num: true, cls: "uncommitted", html: (c) => esc(num(c.messages_uncommitted)) },
  { key: "acks_uncommitted", label: "Uncommitted acks", num: true, html: (c) => esc(num(c.acks_uncommitted)) },
  { key: "state", label: "State", html: (c) => esc(c.state) },
];

function mode(c) {
  return `${c.transactional ? "T" : ""}${c.confirm ? "C" : ""}`;
}

const clientState = { connections: { sort: { key: "name", desc: false }, data: [] }, channels: { sort: { key: "name", desc: false }, data: [] } };

export const connections = {
  mount(root) {
    root.innerHTML = `<h1>Connections</h1><div id="connections-table"></div><h2>Channels</h2>
      <p class="muted">Mode: <span class="tag tx">T</span> transactional (tx.select or an AMQP 1.0 coordinator), <span class="tag">C</span> confirm.</p>
      <div id="channels-table"></div>`;
    const draw = () => {
      const c = clientState.connections, h = clientState.channels;
      root.querySelector("#connections-table").innerHTML = table(connectionColumns, sorted(connectionColumns, c.data, c.sort), c.sort, 'id="connections"');
      root.querySelector("#channels-table").innerHTML = table(channelColumns, sorted(channelColumns, h.data, h.sort), h.sort, 'id="channels"');
    };
    onSort(root.querySelector("#connections-table"), clientState.connections, draw);
    onSort(root.querySelector("#channels-table"), clientState.channels, draw);
    clientState.draw = draw;
  },
  async update() {
    [clientState.connections.data, clientState.channels.data] = await Promise.all([get("/connections"), get("/channels")]);
    clientState.draw();
  },
};

// ---------------------------------------------------------------------- transactions
const txColumns = [
  { label: "ID", html: (t) => esc(t.id) },
  { label: "State", html: (t) => esc(t.state) },
  { label: "Connection", html: (t) => esc(t.connection) },
  { label: "Channel / session", num: true, html: (t) => esc(t.channel) },
  { label: "Protocol", html: (t) => esc(t.protocol) },
  { label: "Virtual host", html: (t) => esc(t.vhost) },
  { label: "Age", num: true, html: (t) => esc(age(t.age_seconds)) },
  { label: "Staged publishes", num: true, cls: "staged-publishes", html: (t) => esc(num(t.staged_publishes)) },
  { label: "Staged settlements", num: true, html: (t) => esc(num(t.staged_settlements)) },
  { label: "Staged acquisitions", num: true, html: (t) => esc(num(t.staged_acquisitions)) },
];
const halfColumns = [
  { label: "ID", html: (t) => esc(t.id) },
  { label: "Kind", cls: "half-kind", html: (t) => (t.prepared ? "prepared" : "half") },
  { label: "Virtual host", html: (t) => esc(t.vhost) },
  { label: "Held messages", num: true, html: (t) => esc(num(t.messages)) },
  { label: "Locked acks", num: true, cls: "half-acks", html: (t) => esc(num(t.acks || 0)) },
  { label: "Queues", html: (t) => esc((t.queues || []).join(", ")) },
  { label: "Age", num: true, html: (t) => esc(age(t.age_seconds)) },
  { label: "Checks sent", num: true, html: (t) => esc(num(t.checks_sent)) },
  { label: "Check queue", html: (t) => esc(t.check_queue) },
  { label: "Decide", html: (t) => ["commit", "rollback"].map((d) => `<button type="button" ${d === "rollback" ? 'class="danger"' : ""} data-vhost="${esc(t.vhost)}" data-half="${esc(t.id)}" data-decision="${d}">${d === "commit" ? "Commit" : "Roll back"}</button>`).join(" ") },
];

export const transactions = {
  mount(root) {
    root.innerHTML = `<h1>Transactions</h1><h2>Open transactions</h2>
      <p class="muted">Work staged by 0-9-1 channels after tx.select and by AMQP 1.0 transactions, not yet committed or rolled back.</p>
      <div id="tx-table"></div><h2>Half transactions</h2>
      <p class="muted">Held half messages awaiting their producer's decision, and prepared transactions (their publishes held, their acked messages locked) awaiting their transaction manager's (see docs/half-messages.md). Deciding here is final.</p>
      <div id="half-table"></div><p id="half-result"></p>`;
    root.querySelector("#half-table").addEventListener("click", async (event) => {
      const button = event.target.closest("button[data-half]");
      if (!button) return;
      const { vhost, half: id } = button.dataset;
      const decision = button.dataset.decision;
      if (!window.confirm(`${decision === "commit" ? "Commit" : "Roll back"} half transaction ${id}?`)) return;
      const out = root.querySelector("#half-result");
      try {
        const result = await call("POST", `/half-transactions/${seg(vhost)}/${seg(id)}/${decision}`);
        const acks = result.acks === undefined ? "" : `, ${result.acks} ack(s)`;
        out.className = "ok"; out.textContent = `${result.decision}: ${result.messages} message(s)${acks}.`;
        await transactions.update(root);
      } catch (err) { out.className = "error"; out.textContent = err.message; }
    });
  },
  async update(root) {
    const [open, half] = await Promise.all([get("/transactions"), get("/half-transactions")]);
    root.querySelector("#tx-table").innerHTML = table(txColumns, open, null, 'id="transactions"');
    root.querySelector("#half-table").innerHTML = table(halfColumns, half, null, 'id="half-transactions"');
  },
};

