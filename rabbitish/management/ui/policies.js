// Policies and operator policies (/api/policies, /api/operator-policies): both lists, scoped by
// the vhost selector, and one form that adds a policy or, after Edit, replaces one (a PUT of the
// same name: pattern, apply-to, priority and definition).
import { call, get, seg } from "./api.js";
import { $, args, button, field, fill, h, options, say, table } from "./html.js";
import { scoped, vhostField } from "./scope.js";

const KINDS = [["policies", "Policy"], ["operator-policies", "Operator policy"]];
const APPLY_TO = [["all", "Exchanges and queues"], ["queues", "Queues"], ["exchanges", "Exchanges"]];

const columns = (kind) => [
  { label: "Virtual host", cell: (p) => p.vhost },
  { label: "Name", cls: "policy-name", cell: (p) => p.name },
  { label: "Pattern", cls: "policy-pattern", cell: (p) => h("code", {}, p.pattern) },
  { label: "Apply to", cls: "policy-apply-to", cell: (p) => p["apply-to"] },
  { label: "Definition", cls: "policy-definition", cell: (p) => args(p.definition) },
  { label: "Priority", num: true, cls: "policy-priority", cell: (p) => String(p.priority) },
  { label: "", cell: (p) => [button("Edit", { dataset: { edit: kind, vhost: p.vhost, name: p.name } }), " ",
    button("Delete", { class: "danger", dataset: { remove: kind, vhost: p.vhost, name: p.name } })] },
];

const shown = { policies: [], "operator-policies": [] };

function edit(root, kind, policy) {
  $(root, "#policy-kind").value = kind;
  $(root, "#policy-vhost").value = policy.vhost;
  $(root, "#policy-name").value = policy.name;
  $(root, "#policy-pattern").value = policy.pattern;
  $(root, "#policy-apply-to").value = policy["apply-to"];
  $(root, "#policy-priority").value = String(policy.priority);
  $(root, "#policy-definition").value = JSON.stringify(policy.definition, null, 1);
  $(root, "#policy-form-heading").textContent = `Edit ${kind === "policies" ? "policy" : "operator policy"} ${policy.name}`;
  $(root, "#policy-form").scrollIntoView();
}

export const policies = {
  mount(root) {
    const result = h("span", { id: "policy-result" });
    const form = h("form", { id: "policy-form", class: "panel" },
      h("label", { for: "policy-kind" }, "Kind"), h("select", { id: "policy-kind" }, options(KINDS)),
      vhostField("policy-vhost"),
      field("Name", "policy-name", { required: true, autocomplete: "off" }),
      field("Pattern", "policy-pattern", { required: true, placeholder: "^amq\\." }),
      h("label", { for: "policy-apply-to" }, "Apply to"), h("select", { id: "policy-apply-to" }, options(APPLY_TO)),
      field("Priority", "policy-priority", { type: "number", value: "0" }),
      field("Definition (JSON)", "policy-definition", { placeholder: '{"max-length": 1000}', required: true }, "textarea"),
      h("div", { class: "actions" }, h("button", { type: "submit", id: "policy-save" }, "Save policy"), " ", result));
    fill(root, h("h1", {}, "Policies"),
      h("h2", {}, "User policies"), h("div", { id: "policies-table" }),
      h("h2", {}, "Operator policies"),
      h("p", { class: "muted" }, "Set by the operator; where both set a numeric limit, the lower one applies."),
      h("div", { id: "operator-policies-table" }),
      h("h2", { id: "policy-form-heading" }, "Add or update a policy"), form);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const body = {
          pattern: $(root, "#policy-pattern").value,
          "apply-to": $(root, "#policy-apply-to").value,
          priority: Number($(root, "#policy-priority").value || 0),
          definition: JSON.parse($(root, "#policy-definition").value || "{}"),
        };
        const kind = $(root, "#policy-kind").value;
        await call("PUT", `/${kind}/${seg($(root, "#policy-vhost").value)}/${seg($(root, "#policy-name").value)}`, body);
        say(result, true, "Policy saved.");
        await policies.update(root);
      } catch (err) { say(result, false, err.message); }
    });
    for (const [kind] of KINDS) {
      $(root, `#${kind}-table`).addEventListener("click", async (event) => {
        const target = event.target.closest("button[data-name]");
        if (!target) return;
        const { vhost, name } = target.dataset;
        const policy = shown[kind].find((p) => p.vhost === vhost && p.name === name);
        if (target.dataset.edit && policy) return edit(root, kind, policy);
        if (!target.dataset.remove || !window.confirm(`Delete policy ${name} in ${vhost}?`)) return;
        try {
          await call("DELETE", `/${kind}/${seg(vhost)}/${seg(name)}`);
          say(result, true, "Policy deleted.");
          await policies.update(root);
        } catch (err) { say(result, false, err.message); }
      });
    }
  },
  async update(root) {
    const [user, operator] = await Promise.all([get(scoped("/policies")), get(scoped("/operator-policies"))]);
    shown.policies = user;
    shown["operator-policies"] = operator;
    fill($(root, "#policies-table"), table(columns("policies"), user, null, "policies"));
    fill($(root, "#operator-policies-table"), table(columns("operator-policies"), operator, null, "operator-policies"));
  },
};
