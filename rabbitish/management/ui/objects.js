// One queue's, one exchange's and one connection's page: properties, rates, bindings,
// consumers, channels or AMQP 1.0 sessions and links, and the actions (get messages, publish,
// purge, delete, close). Forms are drawn once; update() redraws the rest.
import { call, get, seg } from "./api.js";
import { $, args, button, field, fill, h, json, link, none, num, options, props, rate, say, sparkline, table } from "./html.js";
import { RATE_SERIES, channelColumns, connectionHash, queueHash, queueKey, rateChart, recordDepth, recordRates } from "./lists.js";

const exchangeLink = (vhost, name) => link(`#/exchanges/${seg(vhost)}/${seg(name || "amq.default")}`, name || "(AMQP default)");

const bindingColumns = (side) => [
  side === "from"
    ? { label: "From", cell: (b) => exchangeLink(b.vhost, b.source) }
    : { label: "To", cell: (b) => link(b.destination_type === "queue" ? queueHash({ vhost: b.vhost, name: b.destination }) : `#/exchanges/${seg(b.vhost)}/${seg(b.destination)}`, `${b.destination_type} ${b.destination}`) },
  { label: "Routing key", cell: (b) => b.routing_key },
  { label: "Arguments", cell: (b) => args(b.arguments) },
];

const consumerColumns = [
  { label: "Channel", cell: (c) => (c.channel_details || {}).name },
  { label: "Consumer tag", cell: (c) => c.consumer_tag },
  { label: "Ack required", cell: (c) => (c.ack_required ? "yes" : "no") },
  { label: "Exclusive", cell: (c) => (c.exclusive ? "yes" : "no") },
  { label: "Prefetch", num: true, cell: (c) => num(c.prefetch_count) },
  { label: "Arguments", cell: (c) => args(c.arguments) },
];

const ACKMODES = [
  ["ack_requeue_true", "Nack message requeue true"],
  ["ack_requeue_false", "Automatic ack"],
  ["reject_requeue_true", "Reject requeue true"],
  ["reject_requeue_false", "Reject requeue false"],
];

function publishForm(prefix, withKey) {
  return h("form", { id: `${prefix}-publish`, class: "panel" },
    withKey ? field("Routing key", `${prefix}-routing-key`) : null,
    field("Persistent", `${prefix}-persistent`, { type: "checkbox" }),
    field("Headers (JSON)", `${prefix}-headers`, { placeholder: '{"x-key": "value"}' }),
    field("Properties (JSON)", `${prefix}-properties`, { placeholder: '{"content_type": "text/plain"}' }),
    field("Payload", `${prefix}-payload`, {}, "textarea"),
    h("div", { class: "actions" }, h("button", { type: "submit", id: `${prefix}-publish-button` }, "Publish message"), " ", h("span", { id: `${prefix}-publish-result` })));
}

async function publish(root, prefix, vhost, exchange, routingKey) {
  const out = $(root, `#${prefix}-publish-result`);
  try {
    const value = (id) => $(root, `#${prefix}-${id}`).value.trim();
    const properties = value("properties") ? JSON.parse(value("properties")) : {};
    if (value("headers")) properties.headers = JSON.parse(value("headers"));
    if ($(root, `#${prefix}-persistent`).checked) properties.delivery_mode = 2;
    const key = routingKey === undefined ? $(root, `#${prefix}-routing-key`).value : routingKey;
    const body = { routing_key: key, properties, payload: $(root, `#${prefix}-payload`).value, payload_encoding: "string" };
    const result = await call("POST", `/exchanges/${seg(vhost)}/${seg(exchange || "amq.default")}/publish`, body);
    say(out, result.routed, result.routed ? "Message published." : "Message published, but not routed.");
  } catch (err) { say(out, false, err.message); }
}

// A message from get-messages; its headers each on a line, as text.
function message(m, i) {
  const { headers, ...rest } = m.properties || {};
  const headerList = headers && Object.keys(headers).length
    ? h("ul", { class: "headers" }, Object.entries(headers).map(([k, v]) => h("li", {}, h("span", { class: "header-name" }, k), ": ", h("span", { class: "header-value" }, typeof v === "string" ? v : JSON.stringify(v)))))
    : undefined;
  return h("div", { class: "message" }, h("strong", {}, `Message ${i + 1}`), " ", props([
    ["Exchange", m.exchange || "(AMQP default)"], ["Routing key", m.routing_key],
    ["Redelivered", m.redelivered ? "yes" : "no"], ["Messages left in queue", num(m.message_count)],
    ["Headers", headerList], ["Properties", json(rest) || undefined],
    ["Payload", `${num(m.payload_bytes)} bytes, encoding ${m.payload_encoding}`],
  ]), h("pre", { class: "payload" }, m.payload));
}

const total = (id, label, value) => h("div", { class: "total" }, h("div", { class: "value", id }, value), h("div", { class: "label" }, label));

// ---------------------------------------------------------------------- queue
export const queue = {
  mount(root, [vhost, name]) {
    const path = `/queues/${seg(vhost)}/${seg(name)}`;
    const results = h("div", { id: "get-results" });
    const actionResult = h("span", { id: "queue-action-result" });
    const getForm = h("form", { id: "get-form", class: "panel" },
      h("label", { for: "get-ackmode" }, "Ack mode"), h("select", { id: "get-ackmode" }, options(ACKMODES)),
      h("label", { for: "get-encoding" }, "Encoding"), h("select", { id: "get-encoding" }, options([["auto", "Auto string / base64"], ["base64", "base64"]])),
      field("Messages", "get-count", { type: "number", min: 1, value: "1" }),
      h("div", { class: "actions" }, h("button", { type: "submit", id: "get-button" }, "Get message(s)")));
    fill(root, h("h1", {}, "Queue ", h("span", { id: "queue-name" }, name), " ", h("span", { class: "muted" }, `in ${vhost}`)),
      h("div", { id: "queue-summary" }),
      h("div", { class: "cols" },
        h("section", {}, h("h2", {}, "Message rates"), h("div", { id: "queue-rates" })),
        h("section", {}, h("h2", {}, "Details"), h("div", { id: "queue-details" }), h("h2", {}, "Policy"), h("div", { id: "queue-policy" }))),
      h("h2", {}, "Consumers"), h("div", { id: "queue-consumers" }),
      h("h2", {}, "Bindings"), h("div", { id: "queue-bindings" }),
      h("h2", {}, "Get messages"), getForm, results,
      h("h2", {}, "Publish message"), h("p", { class: "muted" }, "Through the default exchange, with the queue's name as routing key."), publishForm("queue", false),
      h("h2", {}, "Purge and delete"),
      h("p", {}, button("Purge messages", { id: "purge-button" }), " ", button("Delete queue", { id: "delete-button", class: "danger" }), " ", actionResult));
    getForm.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const body = { count: Number($(root, "#get-count").value || 1), ackmode: $(root, "#get-ackmode").value, encoding: $(root, "#get-encoding").value, truncate: 50000 };
        const messages = await call("POST", `${path}/get`, body);
        fill(results, messages.length ? messages.map(message) : h("p", { class: "muted" }, "Queue is empty."));
        await queue.update(root, [vhost, name]);
      } catch (err) { fill(results, h("p", { class: "error" }, err.message)); }
    });
    $(root, "#queue-publish").addEventListener("submit", async (e) => {
      e.preventDefault();
      await publish(root, "queue", vhost, "", name);
      await queue.update(root, [vhost, name]);
    });
    $(root, "#purge-button").addEventListener("click", async () => {
      if (!window.confirm(`Purge all ready messages of queue ${name}?`)) return;
      try {
        await call("DELETE", `${path}/contents`);
        say(actionResult, true, "Queue purged.");
        await queue.update(root, [vhost, name]);
      } catch (err) { say(actionResult, false, err.message); }
    });
    $(root, "#delete-button").addEventListener("click", async () => {
      if (!window.confirm(`Delete queue ${name}?`)) return;
      try {
        await call("DELETE", path);
        window.location.hash = "#/queues";
      } catch (err) { say(actionResult, false, err.message); }
    });
  },
  async update(root, [vhost, name]) {
    const path = `/queues/${seg(vhost)}/${seg(name)}`;
    const [q, bindings] = await Promise.all([get(path), get(`${path}/bindings`)]);
    const history = recordDepth(q);
    recordRates(queueKey(q), q.message_stats);
    const stats = q.message_stats || {};
    const r = (k) => rate((stats[`${k}_details`] || {}).rate);
    fill($(root, "#queue-summary"), h("div", { class: "totals" },
      total("q-ready", "Ready", num(q.messages_ready)), total("q-unacked", "Unacked", num(q.messages_unacknowledged)),
      total("q-messages", "Total", num(q.messages)), total("q-consumers", "Consumers", num(q.consumers)),
      total("q-depth", "Depth", sparkline(history, 110, 36)),
      RATE_SERIES.map(([key, label]) => total(`q-rate-${key}`, label, r(key)))));
    fill($(root, "#queue-rates"), rateChart(queueKey(q), "queue-rate-chart"));
    fill($(root, "#queue-details"), props([
      ["Type", q.type], ["State", q.state], ["Durable", q.durable ? "yes" : "no"], ["Auto delete", q.auto_delete ? "yes" : "no"],
      ["Exclusive", q.exclusive ? `yes${q.owner_pid_details ? ` (${q.owner_pid_details.name})` : ""}` : "no"],
      ["Arguments", Object.keys(q.arguments || {}).length ? args(q.arguments) : none()],
      ["Message bytes (ready)", num(q.message_bytes_ready)],
      ["Half messages held", q.messages_half === undefined ? undefined : num(q.messages_half)],
      ["Locked by prepared acks", q.messages_prepared === undefined ? undefined : num(q.messages_prepared)],
    ]));
    const hasPolicy = "policy" in q || "effective_policy_definition" in q;
    const definition = q.effective_policy_definition || {};
    fill($(root, "#queue-policy"), hasPolicy ? props([
      ["Policy", q.policy ? link(`#/policies`, q.policy) : none()],
      ["Operator policy", "operator_policy" in q ? (q.operator_policy || none()) : undefined],
      ["Effective definition", Object.keys(definition).length ? args(definition) : none()],
    ]) : h("p", { class: "muted" }, "No policy information."));
    fill($(root, "#queue-consumers"), table(consumerColumns, q.consumer_details || [], null, "consumers"));
    fill($(root, "#queue-bindings"), table(bindingColumns("from"), bindings, null, "queue-bindings-table"));
  },
};

// ---------------------------------------------------------------------- exchange
export const exchange = {
  mount(root, [vhost, name]) {
    const label = name === "amq.default" ? "(AMQP default)" : name;
    const deletable = !name.startsWith("amq.");
    fill(root, h("h1", {}, "Exchange ", h("span", { id: "exchange-name" }, label), " ", h("span", { class: "muted" }, `in ${vhost}`)),
      h("div", { id: "exchange-details" }),
      h("h2", {}, "Bindings from this exchange"), h("div", { id: "exchange-source" }),
      h("h2", {}, "Bindings to this exchange"), h("div", { id: "exchange-destination" }),
      h("h2", {}, "Publish message"), publishForm("exchange", true),
      deletable ? [h("h2", {}, "Delete"), h("p", {}, button("Delete exchange", { id: "delete-exchange", class: "danger" }), " ", h("span", { id: "exchange-action-result" }))] : null);
    $(root, "#exchange-publish").addEventListener("submit", async (e) => {
      e.preventDefault();
      await publish(root, "exchange", vhost, name === "amq.default" ? "" : name);
    });
    if (deletable) $(root, "#delete-exchange").addEventListener("click", async () => {
      if (!window.confirm(`Delete exchange ${name}?`)) return;
      try {
        await call("DELETE", `/exchanges/${seg(vhost)}/${seg(name)}`);
        window.location.hash = "#/exchanges";
      } catch (err) { say($(root, "#exchange-action-result"), false, err.message); }
    });
  },
  async update(root, [vhost, name]) {
    const path = `/exchanges/${seg(vhost)}/${seg(name)}`;
    const [x, source, destination] = await Promise.all([get(path), get(`${path}/bindings/source`), get(`${path}/bindings/destination`)]);
    fill($(root, "#exchange-details"), props([
      ["Type", x.type], ["Durable", x.durable ? "yes" : "no"], ["Auto delete", x.auto_delete ? "yes" : "no"],
      ["Internal", x.internal ? "yes" : "no"], ["Arguments", Object.keys(x.arguments || {}).length ? args(x.arguments) : none()],
      ["Policy", "policy" in x ? x.policy || "none" : undefined],
    ]));
    fill($(root, "#exchange-source"), table(bindingColumns("to"), source, null, "exchange-source-table"));
    fill($(root, "#exchange-destination"), table(bindingColumns("from"), destination, null));
  },
};

// ---------------------------------------------------------------------- connection
const AMQP_1_0 = "AMQP 1-0";

const incomingColumns = [
  { label: "Handle", num: true, cell: (l) => String(l.handle) },
  { label: "Link", cls: "link-name", cell: (l) => l.link_name },
  { label: "Target address", cell: (l) => l.target_address || "" },
  { label: "Delivery count", num: true, cell: (l) => num(l.delivery_count) },
  { label: "Credit", num: true, cell: (l) => num(l.credit) },
  { label: "Settle mode", cell: (l) => l.snd_settle_mode || "" },
  { label: "Coordinator", cell: (l) => (l.coordinator ? "yes" : "") },
];
const outgoingColumns = [
  { label: "Handle", num: true, cell: (l) => String(l.handle) },
  { label: "Link", cls: "link-name", cell: (l) => l.link_name },
  { label: "Source address", cell: (l) => l.source_address || "" },
  { label: "Queue", cell: (l) => l.queue_name || "" },
  { label: "Delivery count", num: true, cell: (l) => num(l.delivery_count) },
  { label: "Credit", num: true, cell: (l) => num(l.credit) },
  { label: "Settled", cell: (l) => (l.send_settled ? "yes" : "no") },
];

function session(s) {
  return h("section", { class: "session-box", dataset: { session: s.channel_number } },
    h("h3", {}, `Session ${s.channel_number}`, " ", h("span", { class: "muted" }, `${num(s.outgoing_unsettled_deliveries)} unsettled outgoing`)),
    h("h4", {}, "Incoming links (the client sends)"), table(incomingColumns, s.incoming_links || [], null),
    h("h4", {}, "Outgoing links (the client receives)"), table(outgoingColumns, s.outgoing_links || [], null));
}

export const connection = {
  mount(root, [name]) {
    const result = h("span", { id: "connection-action-result" });
    fill(root, h("h1", {}, "Connection ", h("span", { id: "connection-name" }, name)),
      h("div", { id: "connection-details" }),
      h("h2", { id: "connection-parts-heading" }, "Channels"), h("div", { id: "connection-parts" }),
      h("h2", {}, "Close this connection"),
      h("p", {}, button("Force close", { id: "close-connection", class: "danger" }), " ", result));
    $(root, "#close-connection").addEventListener("click", async () => {
      if (!window.confirm(`Close connection ${name}?`)) return;
      try {
        await call("DELETE", `/connections/${seg(name)}`);
        window.location.hash = "#/connections";
      } catch (err) { say(result, false, err.message); }
    });
  },
  async update(root, [name]) {
    const path = `/connections/${seg(name)}`;
    const c = await get(path);
    const amqp10 = c.protocol === AMQP_1_0;
    const parts = await get(`${path}/${amqp10 ? "sessions" : "channels"}`);
    const client = c.client_properties || {};
    fill($(root, "#connection-details"), h("div", { class: "cols" },
      props([["User", c.user], ["Virtual host", c.vhost], ["Protocol", c.protocol], ["State", c.state],
        ["Peer", `${c.peer_host}:${c.peer_port}`], ["Authentication", c.auth_mechanism],
        ["Heartbeat", c.timeout === undefined ? undefined : `${c.timeout} s`], ["Frame max", num(c.frame_max)], ["Channel max", num(c.channel_max)],
        ["Received", `${num(c.recv_oct)} bytes (${rate((c.recv_oct_details || {}).rate)})`], ["Sent", `${num(c.send_oct)} bytes (${rate((c.send_oct_details || {}).rate)})`]]),
      h("div", { id: "client-properties" }, props(Object.entries(client).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])))));
    $(root, "#connection-parts-heading").textContent = amqp10 ? "Sessions and links" : "Channels";
    fill($(root, "#connection-parts"), amqp10
      ? (parts.length ? parts.map(session) : h("p", { class: "muted" }, "No sessions."))
      : table(channelColumns, parts, null, "connection-channels"));
  },
};
