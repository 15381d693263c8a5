// The administrator's pages, as RabbitMQ's Admin tab has them: users (add with tags and a
// password, edit, delete), permissions per user and vhost (configure / write / read regular
// expressions; set and clear) and vhosts (add, delete), all through /api/users, /api/permissions
// and /api/vhosts.
import { call, get, seg } from "./api.js";
import { $, button, field, fill, h, link, none, num, options, props, say, table } from "./html.js";
import { current, loadVhosts, scoped, vhostField } from "./scope.js";

export const userHash = (name) => `#/users/${seg(name)}`;
const TAG_HINT = "administrator, monitoring, policymaker, management";
const tagsText = (tags) => (Array.isArray(tags) ? tags.join(", ") : tags || "");

// The Admin tab's own tabs, above each of its pages.
function tabs(active) {
  return h("nav", { class: "subnav" }, [["users", "Users"], ["vhosts", "Virtual hosts"], ["permissions", "Permissions"]].map(([page, label]) =>
    h("a", { href: `#/${page}`, class: page === active ? "active" : undefined }, label)));
}

// ---------------------------------------------------------------------- permissions
const ACCESS = ["configure", "write", "read"];

function permissionColumns(withUser, withVhost) {
  return [
    withUser ? { label: "User", cls: "permission-user", cell: (p) => link(userHash(p.user), p.user) } : null,
    withVhost ? { label: "Virtual host", cls: "permission-vhost", cell: (p) => p.vhost } : null,
    ...ACCESS.map((kind) => ({ label: kind[0].toUpperCase() + kind.slice(1) + " regexp", cls: `permission-${kind}`, cell: (p) => h("code", {}, p[kind]) })),
    { label: "", cell: (p) => button("Clear", { class: "danger", dataset: { clearUser: p.user, clearVhost: p.vhost } }) },
  ].filter(Boolean);
}

// The set-permission form; `users` null: the user is fixed (the user's own page).
function permissionForm(users) {
  return h("form", { id: "set-permission", class: "panel" },
    users ? [h("label", { for: "permission-user" }, "User"), h("select", { id: "permission-user" }, options(users.map((u) => [u, u])))] : null,
    vhostField("permission-vhost"),
    ACCESS.map((kind) => field(`${kind[0].toUpperCase()}${kind.slice(1)} regexp`, `permission-${kind}-input`, { value: ".*" })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Set permission"), " ", h("span", { id: "permission-result" })));
}

// Wire the form and the Clear buttons; `user()` names the user the form sets.
function wirePermissions(root, user, redraw) {
  const out = () => $(root, "#permission-result");
  $(root, "#set-permission").addEventListener("submit", async (e) => {
    e.preventDefault();
    const vhost = $(root, "#permission-vhost").value;
    const body = Object.fromEntries(ACCESS.map((kind) => [kind, $(root, `#permission-${kind}-input`).value]));
    try {
      await call("PUT", `/permissions/${seg(vhost)}/${seg(user())}`, body);
      say(out(), true, "Permission set.");
      await redraw();
    } catch (err) { say(out(), false, err.message); }
  });
  $(root, "#permissions-table").addEventListener("click", async (event) => {
    const target = event.target.closest("button[data-clear-user]");
    if (!target) return;
    const { clearUser, clearVhost } = target.dataset;
    if (!window.confirm(`Clear the permissions of user ${clearUser} in vhost ${clearVhost}?`)) return;
    try {
      await call("DELETE", `/permissions/${seg(clearVhost)}/${seg(clearUser)}`);
      say(out(), true, "Permission cleared.");
      await redraw();
    } catch (err) { say(out(), false, err.message); }
  });
}

export const permissions = {
  mount(root) {
    fill(root, tabs("permissions"), h("h1", {}, "Permissions"),
      h("p", { class: "muted" }, "What each user may configure, write and read in each virtual host (regular expressions over resource names)."),
      h("div", { id: "permissions-table" }), h("h2", {}, "Set permission"), h("div", { id: "permission-form" }));
    permissions.formDrawn = false;
  },
  async update(root) {
    const path = current() ? `/vhosts/${seg(current())}/permissions` : "/permissions";
    const [list, users] = await Promise.all([get(path), get("/users")]);
    fill($(root, "#permissions-table"), table(permissionColumns(true, true), list, null, "permissions"));
    if (!permissions.formDrawn) { // once: a refresh keeps what was typed
      permissions.formDrawn = true;
      fill($(root, "#permission-form"), permissionForm(users.map((u) => u.name)));
      wirePermissions(root, () => $(root, "#permission-user").value, () => permissions.update(root));
    }
  },
};

// ---------------------------------------------------------------------- users
const userColumns = [
  { label: "Name", cls: "user-name", cell: (u) => link(userHash(u.name), u.name) },
  { label: "Tags", cls: "user-tags", cell: (u) => (u.tags.length ? u.tags.map((t) => [h("span", { class: "tag" }, t), " "]) : none()) },
  { label: "Can access virtual hosts", cell: (u) => (u.vhosts.length ? u.vhosts.join(", ") : h("span", { class: "muted" }, "No access")) },
  { label: "Has password", cell: (u) => (u.password_hash ? "\u25CF" : "\u25CB") },
];

export const users = {
  mount(root) {
    const result = h("span", { id: "add-user-result" });
    const form = h("form", { id: "add-user", class: "panel" },
      field("Username", "new-user-name", { required: true, autocomplete: "off" }),
      field("Password", "new-user-password", { type: "password", autocomplete: "new-password" }),
      field("Tags", "new-user-tags", { placeholder: TAG_HINT }),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Add user"), " ", result));
    fill(root, tabs("users"), h("h1", {}, "Users"), h("div", { id: "users-table" }), h("h2", {}, "Add a user"),
      h("p", { class: "muted" }, `Tags, separated by commas: ${TAG_HINT}. Without a password the user cannot log in with one.`), form);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const name = $(root, "#new-user-name").value;
      const password = $(root, "#new-user-password").value;
      const body = { tags: $(root, "#new-user-tags").value };
      if (password) body.password = password;
      try {
        await call("PUT", `/users/${seg(name)}`, body);
        say(result, true, "User added.");
        await users.update(root);
      } catch (err) { say(result, false, err.message); }
    });
  },
  async update(root) {
    const [list, perms] = await Promise.all([get("/users"), get("/permissions")]);
    const rows = list.map((u) => ({ ...u, vhosts: perms.filter((p) => p.user === u.name).map((p) => p.vhost) }));
    fill($(root, "#users-table"), table(userColumns, rows, null, "users"));
  },
};

export const user = {
  mount(root, [name]) {
    const result = h("span", { id: "edit-user-result" });
    const form = h("form", { id: "edit-user", class: "panel" },
      field("Tags", "edit-user-tags", { placeholder: TAG_HINT }),
      field("New password", "edit-user-password", { type: "password", autocomplete: "new-password", placeholder: "unchanged when empty" }),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Update user"), " ", result));
    fill(root, tabs("users"), h("h1", {}, "User ", h("span", { id: "user-name" }, name)), h("div", { id: "user-details" }),
      h("h2", {}, "Permissions"), h("div", { id: "permissions-table" }), permissionForm(null),
      h("h2", {}, "Update this user"), form,
      h("h2", {}, "Delete this user"), h("p", {}, button("Delete user", { id: "delete-user", class: "danger" }), " ", h("span", { id: "delete-user-result" })));
    user.tagsShown = false;
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { tags: $(root, "#edit-user-tags").value };
      const password = $(root, "#edit-user-password").value;
      if (password) body.password = password;
      try {
        await call("PUT", `/users/${seg(name)}`, body);
        $(root, "#edit-user-password").value = "";
        say(result, true, password ? "User updated, password changed." : "User updated.");
        await user.update(root, [name]);
      } catch (err) { say(result, false, err.message); }
    });
    wirePermissions(root, () => name, () => user.update(root, [name]));
    $(root, "#delete-user").addEventListener("click", async () => {
      if (!window.confirm(`Delete user ${name}?`)) return;
      try {
        await call("DELETE", `/users/${seg(name)}`);
        window.location.hash = "#/users";
      } catch (err) { say($(root, "#delete-user-result"), false, err.message); }
    });
  },
  async update(root, [name]) {
    const [u, perms] = await Promise.all([get(`/users/${seg(name)}`), get(`/users/${seg(name)}/permissions`)]);
    fill($(root, "#user-details"), props([["Tags", u.tags.length ? tagsText(u.tags) : none()], ["Has password", u.password_hash ? "yes" : "no"]]));
    if (!user.tagsShown) { // the form starts from the current tags, once
      user.tagsShown = true;
      $(root, "#edit-user-tags").value = tagsText(u.tags);
    }
    fill($(root, "#permissions-table"), table(permissionColumns(false, true), perms, null, "permissions"));
  },
};

// ---------------------------------------------------------------------- vhosts
const vhostColumns = [
  { label: "Name", cls: "vhost-name", cell: (v) => v.name },
  { label: "Description", cell: (v) => v.description || "" },
  { label: "Tags", cell: (v) => (v.tags || []).map((t) => [h("span", { class: "tag" }, t), " "]) },
  { label: "Ready", num: true, cell: (v) => num(v.messages_ready) },
  { label: "Unacked", num: true, cell: (v) => num(v.messages_unacknowledged) },
  { label: "Total", num: true, cell: (v) => num(v.messages) },
  { label: "", cell: (v) => button("Delete", { class: "danger", dataset: { deleteVhost: v.name } }) },
];

export const vhosts = {
  mount(root) {
    const result = h("span", { id: "add-vhost-result" });
    const form = h("form", { id: "add-vhost", class: "panel" },
      field("Name", "new-vhost-name", { required: true, autocomplete: "off" }),
      field("Description", "new-vhost-description"),
      field("Tags", "new-vhost-tags"),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Add virtual host"), " ", result));
    fill(root, tabs("vhosts"), h("h1", {}, "Virtual hosts"), h("div", { id: "vhosts-table" }), h("h2", {}, "Add a virtual host"), form);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { description: $(root, "#new-vhost-description").value, tags: $(root, "#new-vhost-tags").value };
      try {
        await call("PUT", `/vhosts/${seg($(root, "#new-vhost-name").value)}`, body);
        say(result, true, "Virtual host added.");
        await loadVhosts(); // the header's selector follows
        await vhosts.update(root);
      } catch (err) { say(result, false, err.message); }
    });
    $(root, "#vhosts-table").addEventListener("click", async (event) => {
      const target = event.target.closest("button[data-delete-vhost]");
      if (!target) return;
      const name = target.dataset.deleteVhost;
      if (!window.confirm(`Delete virtual host ${name} and everything in it?`)) return;
      try {
        await call("DELETE", `/vhosts/${seg(name)}`);
        say(result, true, "Virtual host deleted.");
        await loadVhosts(); // the header's selector follows
        await vhosts.update(root);
      } catch (err) { say(result, false, err.message); }
    });
  },
  async update(root) {
    const list = await get(scoped("/vhosts"));
    fill($(root, "#vhosts-table"), table(vhostColumns, Array.isArray(list) ? list : [list], null, "vhosts"));
  },
};
