// One queue's page and one exchange's page: properties, bindings, consumers, and the actions
// (get messages, publish, purge, delete). Forms are drawn once; update() redraws the rest.
import { call, get, seg } from "./api.js";
import { args, esc, json, link, num, props, rate, sparkline, table } from "./html.js";
import { queueHash, recordDepth } from "./lists.js";

const bindingColumns = (side) => [
  side === "from"
    ? { label: "From", html: (b) => link(`#/exchanges/${seg(b.vhost)}/${seg(b.source || "amq.default")}`, b.source || "(AMQP default)") }
    : { label: "To", html: (b) => link(b.destination_type === "queue" ? queueHash({ vhost: b.vhost, name: b.destination }) : `#/exchanges/${seg(b.vhost)}/${seg(b.destination)}`, `${b.destination_type} ${b.destination}`) },
  { label: "Routing key", html: (b) => esc(b.routing_key) },
  { label: "Arguments", html: (b) => args(b.arguments) },
];

const consumerColumns = [
  { label: "Channel", html: (c) => esc((c.channel_details || {}).name) },
  { label: "Consumer tag", html: (c) => esc(c.consumer_tag) },
  { label: "Ack required", html: (c) => (c.ack_required ? "yes" : "no") },
  { label: "Exclusive", html: (c) => (c.exclusive ? "yes" : "no") },
  { label: "Prefetch", num: true, html: (c) => esc(num(c.prefetch_count)) },
  { label: "Arguments", html: (c) => args(c.arguments) },
];

const ACKMODES = [
  ["ack_requeue_true", "Nack message requeue true"],
  ["ack_requeue_false", "Automatic ack"],
  ["reject_requeue_true", "Reject requeue true"],
  ["reject_requeue_false", "Reject requeue false"],
];

function publishForm(prefix, withKey) {
  return `<form id="${prefix}-publish" class="panel">
    ${withKey ? `<label for="${prefix}-routing-key">Routing key</label><input id="${prefix}-routing-key">` : ""}
    <label for="${prefix}-persistent">Persistent</label><input id="${prefix}-persistent" type="checkbox">
    <label for="${prefix}-headers">Headers (JSON)</label><input id="${prefix}-headers" placeholder='{"x-key": "value"}'>
    <label for="${prefix}-properties">Properties (JSON)</label><input id="${prefix}-properties" placeholder='{"content_type": "text/plain"}'>
    <label for="${prefix}-payload">Payload</label><textarea id="${prefix}-payload"></textarea>
    <div class="actions"><button type="submit" id="${prefix}-publish-button">Publish message</button> <span id="${prefix}-publish-result"></span></div></form>`;
}

async function publish(root, prefix, vhost, exchange, routingKey) {
  const out = root.querySelector(`#${prefix}-publish-result`);
  try {
    const value = (id) => root.querySelector(`#${prefix}-${id}`).value.trim();
    const properties = value("properties") ? JSON.parse(value("properties")) : {};
    if (value("headers")) properties.headers = JSON.parse(value("headers"));
    if (root.querySelector(`#${prefix}-persistent`).checked) properties.delivery_mode = 2;
    const key = routingKey === undefined ? root.querySelector(`#${prefix}-routing-key`).value : routingKey;
    const body = { routing_key: key, properties, payload: root.querySelector(`#${prefix}-payload`).value, payload_encoding: "string" };
    const result = await call("POST", `/exchanges/${seg(vhost)}/${seg(exchange || "amq.default")}/publish`, body);
    out.className = result.routed ? "ok" : "error";
    out.textContent = result.routed ? "Message published." : "Message published, but not routed.";
  } catch (err) { out.className = "error"; out.textContent = err.message; }
}

function messageHtml(m, i) {
  return `<div class="message"><strong>Message ${i + 1}</strong> ${props([
    ["Exchange", esc(m.exchange || "(AMQP default)")], ["Routing key", esc(m.routing_key)],
    ["Redelivered", m.redelivered ? "yes" : "no"], ["Messages left in queue", esc(num(m.message_count))],
    ["Properties", json(m.properties)], ["Payload", `${esc(num(m.payload_bytes))} bytes, encoding ${esc(m.payload_encoding)}`],
  ])}<pre class="payload">${esc(m.payload)}</pre></div>`;
}

// ---------------------------------------------------------------------- queue
export const queue = {
  mount(root, [vhost, name]) {
    const path = `/queues/${seg(vhost)}/${seg(name)}`;
    root.innerHTML = `<h1>Queue <span id="queue-name">${esc(name)}</span> <span class="muted">in ${esc(vhost)}</span></h1>
      <div id="queue-summary"></div>
      <div class="cols"><section><h2>Details</h2><div id="queue-details"></div></section>
      <section><h2>Policy</h2><div id="queue-policy"></div></section></div>
      <h2>Consumers</h2><div id="queue-consumers"></div>
      <h2>Bindings</h2><div id="queue-bindings"></div>
      <h2>Get messages</h2>
      <form id="get-form" class="panel"><label for="get-ackmode">Ack mode</label><select id="get-ackmode">${ACKMODES.map(([v, l]) => `<option value="${v}">${esc(l)}</option>`).join("")}</select>
        <label for="get-encoding">Encoding</label><select id="get-encoding"><option value="auto">Auto string / base64</option><option value="base64">base64</option></select>
        <label for="get-count">Messages</label><input id="get-count" type="number" min="1" value="1">
        <div class="actions"><button type="submit" id="get-button">Get message(s)</button></div></form>
      <div id="get-results"></div>
      <h2>Publish message</h2><p class="muted">Through the default exchange, with the queue's name as routing key.</p>${publishForm("queue", false)}
      <h2>Purge and delete</h2><p><button type="button" id="purge-button">Purge messages</button> <button type="button" id="delete-button" class="danger">Delete queue</button> <span id="queue-action-result"></span></p>`;
    root.querySelector("#get-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const out = root.querySelector("#get-results");
      try {
        const body = { count: Number(root.querySelector("#get-count").value || 1), ackmode: root.querySelector("#get-ackmode").value, encoding: root.querySelector("#get-encoding").value, truncate: 50000 };
        const messages = await call("POST", `${path}/get`, body);
        out.innerHTML = messages.length ? messages.map(messageHtml).join("") : `<p class="muted">Queue is empty.</p>`;
        await queue.update(root, [vhost, name]);
      } catch (err) { out.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
    });
    root.querySelector("#queue-publish").addEventListener("submit", async (e) => {
      e.preventDefault();
      await publish(root, "queue", vhost, "", name);
      await queue.update(root, [vhost, name]);
    });
    const result = root.querySelector("#queue-action-result");
    root.querySelector("#purge-button").addEventListener("click", async () => {
      if (!window.confirm(`Purge all ready messages of queue ${name}?`)) return;
      try {
        await call("DELETE", `${path}/contents`);
        result.className = "ok"; result.textContent = "Queue purged.";
        await queue.update(root, [vhost, name]);
      } catch (err) { result.className = "error"; result.textContent = err.message; }
    });
    root.querySelector("#delete-button").addEventListener("click", async () => {
      if (!window.confirm(`Delete queue ${name}?`)) return;
      try {
        await call("DELETE", path);
        window.location.hash = "#/queues";
      } catch (err) { result.className = "error"; result.textContent = err.message; }
    });
  },
  async update(root, [vhost, name]) {
    const path = `/queues/${seg(vhost)}/${seg(name)}`;
    const [q, bindings] = await Promise.all([get(path), get(`${path}/bindings`)]);
    const history = recordDepth(q);
    const stats = q.message_stats || {};
    const r = (k) => rate((stats[`${k}_details`] || {}).rate);
    root.querySelector("#queue-summary").innerHTML = `<div class="totals">
      <div class="total"><div class="value" id="q-ready">${esc(num(q.messages_ready))}</div><div class="label">Ready</div></div>
      <div class="total"><div class="value" id="q-unacked">${esc(num(q.messages_unacknowledged))}</div><div class="label">Unacked</div></div>
      <div class="total"><div class="value" id="q-messages">${esc(num(q.messages))}</div><div class="label">Total</div></div>
      <div class="total"><div class="value" id="q-consumers">${esc(num(q.consumers))}</div><div class="label">Consumers</div></div>
      <div class="total"><div class="value">${sparkline(history, 160, 36)}</div><div class="label">Depth</div></div>
      <div class="total"><div class="value">${esc(r("publish"))}</div><div class="label">Incoming</div></div>
      <div class="total"><div class="value">${esc(r("deliver_get"))}</div><div class="label">Deliver / get</div></div>
      <div class="total"><div class="value">${esc(r("ack"))}</div><div class="label">Ack</div></div></div>`;
    root.querySelector("#queue-details").innerHTML = props([
      ["Type", esc(q.type)], ["State", esc(q.state)], ["Durable", q.durable ? "yes" : "no"], ["Auto delete", q.auto_delete ? "yes" : "no"],
      ["Exclusive", q.exclusive ? `yes${q.owner_pid_details ? ` (${esc(q.owner_pid_details.name)})` : ""}` : "no"],
      ["Arguments", args(q.arguments) || '<span class="muted">none</span>'],
      ["Message bytes (ready)", esc(num(q.message_bytes_ready))],
      ["Half messages held", q.messages_half === undefined ? undefined : esc(num(q.messages_half))],
      ["Locked by prepared acks", q.messages_prepared === undefined ? undefined : esc(num(q.messages_prepared))],
    ]);
    const hasPolicy = "policy" in q || "effective_policy_definition" in q;
    root.querySelector("#queue-policy").innerHTML = hasPolicy ? props([
      ["Policy", q.policy ? esc(q.policy) : '<span class="muted">none</span>'],
      ["Operator policy", "operator_policy" in q ? (q.operator_policy ? esc(q.operator_policy) : '<span class="muted">none</span>') : undefined],
      ["Effective definition", args(q.effective_policy_definition) || '<span class="muted">none</span>'],
    ]) : '<p class="muted">No policy information.</p>';
    root.querySelector("#queue-consumers").innerHTML = table(consumerColumns, q.consumer_details || [], null, 'id="consumers"');
    root.querySelector("#queue-bindings").innerHTML = table(bindingColumns("from"), bindings, null, 'id="queue-bindings-table"');
  },
};

// ---------------------------------------------------------------------- exchange
export const exchange = {
  mount(root, [vhost, name]) {
    const label = name === "amq.default" ? "(AMQP default)" : name;
    root.innerHTML = `<h1>Exchange <span id="exchange-name">${esc(label)}</span> <span class="muted">in ${esc(vhost)}</span></h1>
      <div id="exchange-details"></div>
      <h2>Bindings from this exchange</h2><div id="exchange-source"></div>
      <h2>Bindings to this exchange</h2><div id="exchange-destination"></div>
      <h2>Publish message</h2>${publishForm("exchange", true)}
      ${name.startsWith("amq.") ? "" : '<h2>Delete</h2><p><button type="button" id="delete-exchange" class="danger">Delete exchange</button> <span id="exchange-action-result"></span></p>'}`;
    root.querySelector("#exchange-publish").addEventListener("submit", async (e) => {
      e.preventDefault();
      await publish(root, "exchange", vhost, name === "amq.default" ? "" : name);
    });
    const del = root.querySelector("#delete-exchange");
    if (del) del.addEventListener("click", async () => {
      if (!window.confirm(`Delete exchange ${name}?`)) return;
      try {
        await call("DELETE", `/exchanges/${seg(vhost)}/${seg(name)}`);
        window.location.hash = "#/exchanges";
      } catch (err) { root.querySelector("#exchange-action-result").textContent = err.message; }
    });
  },
  async update(root, [vhost, name]) {
    const path = `/exchanges/${seg(vhost)}/${seg(name)}`;
    const [x, source, destination] = await Promise.all([get(path), get(`${path}/bindings/source`), get(`${path}/bindings/destination`)]);
    root.querySelector("#exchange-details").innerHTML = props([
      ["Type", esc(x.type)], ["Durable", x.durable ? "yes" : "no"], ["Auto delete", x.auto_delete ? "yes" : "no"],
      ["Internal", x.internal ? "yes" : "no"], ["Arguments", args(x.arguments) || '<span class="muted">none</span>'],
      ["Policy", "policy" in x ? esc(x.policy || "none") : undefined],
    ]);
    root.querySelector("#exchange-source").innerHTML = table(bindingColumns("to"), source, null, 'id="exchange-source-table"');
    root.querySelector("#exchange-destination").innerHTML = table(bindingColumns("from"), destination, null);
  },
};

