// The list pages: overview, queues, exchanges, connections and channels, transactions. Each
// view's mount() draws what stays (headings, filters, forms); update() fetches and redraws the
// live parts, so a refresh never loses what the user typed. Lists follow the vhost selector.
import { call, get, seg } from "./api.js";
import { $, age, args, button, chart, field, fill, h, link, num, onSort, rate, say, sorted, sparkline, table } from "./html.js";
import { rates, record, recorded } from "./history.js";
import { scoped, underVhost, vhostField } from "./scope.js";

export const queueHash = (q) => `#/queues/${seg(q.vhost)}/${seg(q.name)}`;
export const exchangeHash = (vhost, name) => `#/exchanges/${seg(vhost)}/${seg(name || "amq.default")}`;
export const connectionHash = (name) => `#/connections/${seg(name)}`;
export const queueKey = (q) => `queue\0${q.vhost}\0${q.name}`;

export function recordDepth(q) {
  return record(queueKey(q), { depth: q.messages || 0 }).depth;
}

// The three rates every chart shows, under RabbitMQ's message_stats names.
export const RATE_SERIES = [
  ["publish", "Publish", "#f60"],
  ["deliver_get", "Deliver / get", "#2a9d3a"],
  ["ack", "Ack", "#7a4bc2"],
];

// A rate chart from what history.js has kept under `key`.
export function rateChart(key, id) {
  return chart(RATE_SERIES.map(([name, label, color]) => ({ label, color, unit: "/s", values: recorded(key, name) })), id);
}

export function recordRates(key, stats) {
  record(key, rates(stats, RATE_SERIES.map(([name]) => name)));
}

// ---------------------------------------------------------------------- overview
export const overview = {
  mount(root) {
    fill(root, h("h1", {}, "Overview"), h("div", { id: "overview-totals", class: "totals" }),
      h("div", { class: "cols" },
        h("section", {}, h("h2", {}, "Queued messages"), h("div", { id: "overview-queued" })),
        h("section", {}, h("h2", {}, "Message rates"), h("div", { id: "overview-rates" }))),
      h("h2", {}, "Connections"), h("div", { id: "overview-connections" }),
      h("h2", {}, "Node"), h("div", { id: "overview-node" }));
  },
  async update(root) {
    const [o, connections] = await Promise.all([get("/overview"), get("/connections")]);
    const t = o.object_totals || {}, q = o.queue_totals || {}, s = o.message_stats || {};
    const queued = record("overview", { ready: q.messages_ready || 0, unacked: q.messages_unacknowledged || 0 });
    recordRates("overview", s);
    const total = (id, label, value) => h("div", { class: "total", id }, h("div", { class: "value" }, num(value)), h("div", { class: "label" }, label));
    fill($(root, "#overview-totals"),
      total("total-messages", "Messages", q.messages), total("total-ready", "Ready", q.messages_ready),
      total("total-unacked", "Unacked", q.messages_unacknowledged), total("total-connections", "Connections", t.connections),
      total("total-channels", "Channels", t.channels), total("total-queues", "Queues", t.queues),
      total("total-exchanges", "Exchanges", t.exchanges), total("total-consumers", "Consumers", t.consumers));
    fill($(root, "#overview-queued"), chart([
      { label: "Ready", color: "#e6a700", values: queued.ready },
      { label: "Unacked", color: "#1f6fb2", values: queued.unacked },
    ], "queued-chart"));
    fill($(root, "#overview-rates"), rateChart("overview", "rates-chart"),
      h("p", { class: "muted" }, `The broker's rates at each refresh. So far ${num(s.publish)} published, ${num(s.deliver_get)} delivered, ${num(s.ack)} acknowledged.`));
    fill($(root, "#overview-connections"), table(connectionColumns, connections, null));
    const listeners = (o.listeners || []).map((l) => `${l.protocol} ${l.ip_address}:${l.port}`).join(", ");
    fill($(root, "#overview-node"), h("p", {}, `${o.product_name} ${o.product_version} (speaks RabbitMQ ${o.rabbitmq_version}) \u00B7 node ${o.node} \u00B7 listeners: ${listeners} \u00B7 `,
      h("a", { href: "metrics" }, "Prometheus metrics")));
  },
};

// ---------------------------------------------------------------------- queues
const queueState = { sort: { key: "name", desc: false }, filter: "", data: [] };
const queueColumns = [
  { key: "vhost", label: "Virtual host", cell: (q) => q.vhost },
  { key: "name", label: "Name", cls: "queue-name", cell: (q) => link(queueHash(q), q.name) },
  { key: "type", label: "Type", cell: (q) => q.type },
  { key: "features", label: "Features", value: features, cell: (q) => [features(q), q.policy ? [" ", h("span", { class: "tag" }, `policy: ${q.policy}`)] : null] },
  { key: "messages_ready", label: "Ready", num: true, cls: "ready", cell: (q) => num(q.messages_ready) },
  { key: "messages_unacknowledged", label: "Unacked", num: true, cls: "unacked", cell: (q) => num(q.messages_unacknowledged) },
  { key: "messages", label: "Total", num: true, cls: "messages", cell: (q) => num(q.messages) },
  { label: "Depth", cell: (q) => sparkline(recorded(queueKey(q), "depth")) },
  { key: "consumers", label: "Consumers", num: true, cell: (q) => num(q.consumers) },
  { key: "publish_rate", label: "Incoming", num: true, value: (q) => stat(q, "publish"), cell: (q) => rate(stat(q, "publish")) },
  { key: "deliver_rate", label: "Deliver / get", num: true, value: (q) => stat(q, "deliver_get"), cell: (q) => rate(stat(q, "deliver_get")) },
  { key: "ack_rate", label: "Ack", num: true, value: (q) => stat(q, "ack"), cell: (q) => rate(stat(q, "ack")) },
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
  fill($(root, "#queues-table"), table(queueColumns, sorted(queueColumns, rows, queueState.sort), queueState.sort, "queues"));
  $(root, "#queues-count").textContent = `${rows.length} of ${queueState.data.length}`;
}

export const queues = {
  mount(root) {
    const result = h("span", { id: "add-queue-result" });
    const form = h("form", { id: "add-queue", class: "panel" },
      vhostField("new-queue-vhost"),
      field("Name", "new-queue-name", { required: true }),
      field("Durable", "new-queue-durable", { type: "checkbox", checked: true }),
      field("Arguments (JSON)", "new-queue-args", { placeholder: '{"x-max-length": 1000}' }),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Add queue"), " ", result));
    fill(root, h("h1", {}, "Queues ", h("span", { id: "queues-count", class: "muted" })),
      h("div", { class: "filter" }, h("label", {}, "Filter ", h("input", { id: "queue-filter", type: "search", placeholder: "name contains", value: queueState.filter }))),
      h("div", { id: "queues-table" }), h("h2", {}, "Add a queue"), form);
    $(root, "#queue-filter").addEventListener("input", (e) => { queueState.filter = e.target.value; drawQueues(root); });
    onSort($(root, "#queues-table"), queueState, () => drawQueues(root));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const raw = $(root, "#new-queue-args").value.trim();
        const body = { durable: $(root, "#new-queue-durable").checked, arguments: raw ? JSON.parse(raw) : {} };
        await call("PUT", `/queues/${seg($(root, "#new-queue-vhost").value)}/${seg($(root, "#new-queue-name").value)}`, body);
        say(result, true, "Queue declared.");
        await queues.update(root);
      } catch (err) { say(result, false, err.message); }
    });
  },
  async update(root) {
    queueState.data = await get(scoped("/queues"));
    queueState.data.forEach(recordDepth);
    drawQueues(root);
  },
};

// ---------------------------------------------------------------------- exchanges
const exchangeState = { sort: { key: "name", desc: false }, data: [] };
const exchangeColumns = [
  { key: "vhost", label: "Virtual host", cell: (x) => x.vhost },
  { key: "name", label: "Name", cls: "exchange-name", cell: (x) => link(exchangeHash(x.vhost, x.name), x.name || "(AMQP default)") },
  { key: "type", label: "Type", cell: (x) => x.type },
  { key: "features", label: "Features", value: (x) => `${x.durable ? "D" : ""}${x.auto_delete ? "AD" : ""}${x.internal ? "I" : ""}`,
    cell: (x) => [[x.durable && "D", x.auto_delete && "AD", x.internal && "I"].filter(Boolean).join(" "), " ", args(x.arguments)] },
  { key: "bindings", label: "Bindings out", num: true, cell: (x) => num(x.bindings) },
];

function drawExchanges(root) {
  fill($(root, "#exchanges-table"), table(exchangeColumns, sorted(exchangeColumns, exchangeState.data, exchangeState.sort), exchangeState.sort, "exchanges"));
}

export const exchanges = {
  mount(root) {
    const result = h("span", { id: "add-exchange-result" });
    const form = h("form", { id: "add-exchange", class: "panel" },
      vhostField("new-exchange-vhost"),
      field("Name", "new-exchange-name", { required: true }),
      [h("label", { for: "new-exchange-type" }, "Type"), h("select", { id: "new-exchange-type" }, ["direct", "fanout", "topic", "headers"].map((t) => h("option", { value: t }, t)))],
      field("Durable", "new-exchange-durable", { type: "checkbox", checked: true }),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Add exchange"), " ", result));
    fill(root, h("h1", {}, "Exchanges"), h("div", { id: "exchanges-table" }), h("h2", {}, "Add an exchange"), form);
    onSort($(root, "#exchanges-table"), exchangeState, () => drawExchanges(root));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const body = { type: $(root, "#new-exchange-type").value, durable: $(root, "#new-exchange-durable").checked };
        await call("PUT", `/exchanges/${seg($(root, "#new-exchange-vhost").value)}/${seg($(root, "#new-exchange-name").value)}`, body);
        say(result, true, "Exchange declared.");
        await exchanges.update(root);
      } catch (err) { say(result, false, err.message); }
    });
  },
  async update(root) {
    const [list, bindings] = await Promise.all([get(scoped("/exchanges")), get(scoped("/bindings"))]);
    const counts = new Map();
    for (const b of bindings) counts.set(`${b.vhost}\0${b.source}`, (counts.get(`${b.vhost}\0${b.source}`) || 0) + 1);
    exchangeState.data = list.map((x) => ({ ...x, bindings: counts.get(`${x.vhost}\0${x.name}`) || 0 }));
    drawExchanges(root);
  },
};

// ---------------------------------------------------------------------- connections, channels
export const connectionColumns = [
  { key: "name", label: "Name", cls: "connection-name", cell: (c) => link(connectionHash(c.name), c.name) },
  { key: "user", label: "User", cell: (c) => c.user },
  { key: "vhost", label: "Virtual host", cell: (c) => c.vhost },
  { key: "protocol", label: "Protocol", cell: (c) => c.protocol },
  { key: "client", label: "Client", value: client, cls: "client", cell: client },
  { key: "channels", label: "Channels", num: true, cell: (c) => num(c.channels) },
  { key: "state", label: "State", cell: (c) => c.state },
];

function client(c) {
  const p = c.client_properties || {};
  return [p.connection_name, p.product, p.version].filter(Boolean).map(String).join(" ");
}

function mode(c) {
  return `${c.transactional ? "T" : ""}${c.confirm ? "C" : ""}`;
}

export const channelColumns = [
  { key: "name", label: "Channel", cell: (c) => c.name },
  { key: "user", label: "User", cell: (c) => c.user },
  { key: "mode", label: "Mode", value: mode, cell: (c) => mode(c).split("").map((m) => h("span", { class: m === "T" ? "tag tx" : "tag", title: m === "T" ? "transactional" : "confirm" }, m)) },
  { key: "prefetch_count", label: "Prefetch", num: true, cell: (c) => num(c.prefetch_count) },
  { key: "consumer_count", label: "Consumers", num: true, cell: (c) => num(c.consumer_count) },
  { key: "messages_unacknowledged", label: "Unacked", num: true, cell: (c) => num(c.messages_unacknowledged) },
  { key: "messages_uncommitted", label: "Uncommitted msgs", num: true, cls: "uncommitted", cell: (c) => num(c.messages_uncommitted) },
  { key: "acks_uncommitted", label: "Uncommitted acks", num: true, cell: (c) => num(c.acks_uncommitted) },
  { key: "state", label: "State", cell: (c) => c.state },
];

const clientState = { connections: { sort: { key: "name", desc: false }, data: [] }, channels: { sort: { key: "name", desc: false }, data: [] } };

function drawClients(root) {
  const c = clientState.connections, ch = clientState.channels;
  fill($(root, "#connections-table"), table(connectionColumns, sorted(connectionColumns, c.data, c.sort), c.sort, "connections"));
  fill($(root, "#channels-table"), table(channelColumns, sorted(channelColumns, ch.data, ch.sort), ch.sort, "channels"));
}

export const connections = {
  mount(root) {
    fill(root, h("h1", {}, "Connections"), h("div", { id: "connections-table" }), h("h2", {}, "Channels"),
      h("p", { class: "muted" }, "Mode: ", h("span", { class: "tag tx" }, "T"), " transactional (tx.select or an AMQP 1.0 coordinator), ", h("span", { class: "tag" }, "C"), " confirm."),
      h("div", { id: "channels-table" }));
    onSort($(root, "#connections-table"), clientState.connections, () => drawClients(root));
    onSort($(root, "#channels-table"), clientState.channels, () => drawClients(root));
  },
  async update(root) {
    [clientState.connections.data, clientState.channels.data] = await Promise.all([get(underVhost("connections")), get(underVhost("channels"))]);
    drawClients(root);
  },
};

// ---------------------------------------------------------------------- transactions
const txColumns = [
  { label: "ID", cell: (t) => t.id },
  { label: "State", cell: (t) => t.state },
  { label: "Connection", cell: (t) => (t.connection ? link(connectionHash(t.connection), t.connection) : "") },
  { label: "Channel / session", num: true, cell: (t) => String(t.channel ?? "") },
  { label: "Protocol", cell: (t) => t.protocol },
  { label: "Virtual host", cell: (t) => t.vhost },
  { label: "Age", num: true, cell: (t) => age(t.age_seconds) },
  { label: "Staged publishes", num: true, cls: "staged-publishes", cell: (t) => num(t.staged_publishes) },
  { label: "Staged settlements", num: true, cell: (t) => num(t.staged_settlements) },
  { label: "Staged acquisitions", num: true, cell: (t) => num(t.staged_acquisitions) },
];
const halfColumns = [
  { label: "ID", cell: (t) => t.id },
  { label: "Kind", cls: "half-kind", cell: (t) => (t.prepared ? "prepared" : "half") },
  { label: "Virtual host", cell: (t) => t.vhost },
  { label: "Held messages", num: true, cell: (t) => num(t.messages) },
  { label: "Locked acks", num: true, cls: "half-acks", cell: (t) => num(t.acks || 0) },
  { label: "Queues", cell: (t) => (t.queues || []).join(", ") },
  { label: "Age", num: true, cell: (t) => age(t.age_seconds) },
  { label: "Checks sent", num: true, cell: (t) => num(t.checks_sent) },
  { label: "Check queue", cell: (t) => t.check_queue },
  { label: "Decide", cell: (t) => ["commit", "rollback"].map((d) => [button(d === "commit" ? "Commit" : "Roll back",
    { class: d === "rollback" ? "danger" : undefined, dataset: { vhost: t.vhost, half: t.id, decision: d } }), " "]) },
];

export const transactions = {
  mount(root) {
    fill(root, h("h1", {}, "Transactions"), h("h2", {}, "Open transactions"),
      h("p", { class: "muted" }, "Work staged by 0-9-1 channels after tx.select and by AMQP 1.0 transactions, not yet committed or rolled back."),
      h("div", { id: "tx-table" }), h("h2", {}, "Half transactions"),
      h("p", { class: "muted" }, "Held half messages awaiting their producer's decision, and prepared transactions (their publishes held, their acked messages locked) awaiting their transaction manager's (see docs/half-messages.md). Deciding here is final."),
      h("div", { id: "half-table" }), h("p", { id: "half-result" }));
    $(root, "#half-table").addEventListener("click", async (event) => {
      const target = event.target.closest("button[data-half]");
      if (!target) return;
      const { vhost, half: id, decision } = target.dataset;
      if (!window.confirm(`${decision === "commit" ? "Commit" : "Roll back"} half transaction ${id}?`)) return;
      const out = $(root, "#half-result");
      try {
        const result = await call("POST", `/half-transactions/${seg(vhost)}/${seg(id)}/${decision}`);
        const acks = result.acks === undefined ? "" : `, ${result.acks} ack(s)`;
        say(out, true, `${result.decision}: ${result.messages} message(s)${acks}.`);
        await transactions.update(root);
      } catch (err) { say(out, false, err.message); }
    });
  },
  async update(root) {
    const [open, half] = await Promise.all([get(scoped("/transactions")), get(scoped("/half-transactions"))]);
    fill($(root, "#tx-table"), table(txColumns, open, null, "transactions"));
    fill($(root, "#half-table"), table(halfColumns, half, null, "half-transactions"));
  },
};
