"""`rabbitish users`, `rabbitish permissions` and `rabbitish vhosts`: rabbitmqctl's access-control
verbs (add_user, set_permissions, add_vhost ...) as subcommands, talking to the running broker
through its management API like every client command. Changes print rabbitmqctl's one-line
progress message; lists print a table, or the API's JSON with --json."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rabbitish.cli.client import DEFAULT_URL, ApiFailure, Client, CliError, segment
from rabbitish.cli.output import AsJson, Url, console, print_json, run
from rabbitish.cli.render import access_table

VhostP = Annotated[str, typer.Option("--vhost", "-p", "-V", help="Virtual host.")]
Name = Annotated[str, typer.Argument(help="User name.")]

users_cli = typer.Typer(add_completion=False, no_args_is_help=True, help="Manage users.")
permissions_cli = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Manage user permissions in vhosts."
)
vhosts_cli = typer.Typer(add_completion=False, no_args_is_help=True, help="Manage vhosts.")


def register(cli: typer.Typer) -> None:
    """Add `users`, `permissions` and `vhosts` to the main command line."""
    cli.add_typer(users_cli, name="users")
    cli.add_typer(permissions_cli, name="permissions")
    cli.add_typer(vhosts_cli, name="vhosts")


def _change(url: str, message: str, method: str, path: str, body: Any = None) -> None:
    def body_() -> None:
        say(message)
        Client(url).request(method, path, body)

    run(body_)


def _delete(url: str, message: str, path: str, missing: str) -> None:
    """DELETE `path`; a 404 becomes "no <missing>" (exit 1)."""

    def body() -> None:
        say(message)
        Client(url).request("DELETE", path, missing=missing)

    run(body)


def say(message: str) -> None:
    """rabbitmqctl's progress line, printed as is (tags are in brackets, not rich markup)."""
    console().print(message, markup=False)


def _list(url: str, path: str, as_json: bool, title: str, columns: list[str]) -> None:
    def body() -> None:
        items = Client(url).get(path)
        if as_json:
            print_json(items)
        else:
            console().print(access_table(title, columns, items))

    run(body)


def _tags(tags: list[str]) -> str:
    return ",".join(t for tag in tags for t in tag.split(",") if t)


# ---------------------------------------------------------------------- users
@users_cli.command("add")
def users_add(
    name: Name,
    password: Annotated[str, typer.Argument(help="Password.")],
    tags: Annotated[str, typer.Option("--tags", help="Comma-separated tags.")] = "",
    url: Url = DEFAULT_URL,
) -> None:
    """Create a user (rabbitmqctl add_user); the broker stores only the password's hash."""

    def body() -> None:
        client = Client(url)
        try:
            client.get(f"/api/users/{segment(name)}")
        except ApiFailure as err:
            if err.status != 404:
                raise
        else:
            raise CliError(f"user '{name}' already exists")
        say(f'Adding user "{name}" ...')
        client.request("PUT", f"/api/users/{segment(name)}", {"password": password, "tags": tags})

    run(body)


@users_cli.command("delete")
def users_delete(name: Name, url: Url = DEFAULT_URL) -> None:
    """Delete a user and its permissions (rabbitmqctl delete_user); its connections close."""
    path = f"/api/users/{segment(name)}"
    _delete(url, f'Deleting user "{name}" ...', path, f"user '{name}'")


@users_cli.command("list")
def users_list(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """List users and their tags (rabbitmqctl list_users)."""
    _list(url, "/api/users", as_json, "Users", ["name", "tags"])


def _update_user(url: str, name: str, message: str, change: dict[str, Any]) -> None:
    """Change one field of a user, keeping the others (the API replaces the whole user)."""

    def body() -> None:
        client = Client(url)
        user = client.get(f"/api/users/{segment(name)}", missing=f"user '{name}'")
        say(message)
        document = {
            "password_hash": user["password_hash"],
            "hashing_algorithm": user["hashing_algorithm"],
            "tags": ",".join(user["tags"]),
            **change,
        }
        if "password" in change:
            del document["password_hash"]
        client.request("PUT", f"/api/users/{segment(name)}", document)

    run(body)


@users_cli.command("change-password")
def users_change_password(
    name: Name,
    password: Annotated[str, typer.Argument(help="New password.")],
    url: Url = DEFAULT_URL,
) -> None:
    """Set a user's password (rabbitmqctl change_password)."""
    _update_user(url, name, f'Changing password for user "{name}" ...', {"password": password})


@users_cli.command("set-tags")
def users_set_tags(
    name: Name,
    tags: Annotated[
        list[str] | None, typer.Argument(help="Tags (administrator, monitoring, ...).")
    ] = None,
    url: Url = DEFAULT_URL,
) -> None:
    """Replace a user's tags; none clears them (rabbitmqctl set_user_tags)."""
    joined = _tags(tags or [])
    message = f'Setting tags for user "{name}" to [{joined.replace(",", ", ")}] ...'
    _update_user(url, name, message, {"tags": joined})


# ---------------------------------------------------------------------- permissions
@permissions_cli.command("set")
def permissions_set(
    name: Name,
    configure: Annotated[str, typer.Argument(help="Configure regex.")],
    write: Annotated[str, typer.Argument(help="Write regex.")],
    read: Annotated[str, typer.Argument(help="Read regex.")],
    vhost: VhostP = "/",
    url: Url = DEFAULT_URL,
) -> None:
    """Set a user's permissions in a vhost (rabbitmqctl set_permissions)."""
    _change(
        url,
        f'Setting permissions for user "{name}" in vhost "{vhost}" ...',
        "PUT",
        f"/api/permissions/{segment(vhost)}/{segment(name)}",
        {"configure": configure, "write": write, "read": read},
    )


@permissions_cli.command("clear")
def permissions_clear(name: Name, vhost: VhostP = "/", url: Url = DEFAULT_URL) -> None:
    """Remove a user's permissions in a vhost (rabbitmqctl clear_permissions)."""
    _delete(
        url,
        f'Clearing permissions for user "{name}" in vhost "{vhost}" ...',
        f"/api/permissions/{segment(vhost)}/{segment(name)}",
        f"permissions for user '{name}' in vhost '{vhost}'",
    )


@permissions_cli.command("list")
def permissions_list(
    vhost: Annotated[
        str | None, typer.Option("--vhost", "-p", "-V", help="Only this vhost.")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="Only this user.")] = None,
    url: Url = DEFAULT_URL,
    as_json: AsJson = False,
) -> None:
    """List permissions: of one vhost (rabbitmqctl list_permissions), of one user
    (list_user_permissions), or all."""
    if user is not None:
        path = f"/api/users/{segment(user)}/permissions"
    elif vhost is not None:
        path = f"/api/vhosts/{segment(vhost)}/permissions"
    else:
        path = "/api/permissions"
    columns = ["user", "vhost", "configure", "write", "read"]
    _list(url, path, as_json, "Permissions", columns)


# ---------------------------------------------------------------------- vhosts
@vhosts_cli.command("add")
def vhosts_add(
    name: Annotated[str, typer.Argument(help="Vhost name.")],
    description: Annotated[str, typer.Option(help="Description.")] = "",
    tags: Annotated[str, typer.Option("--tags", help="Comma-separated tags.")] = "",
    url: Url = DEFAULT_URL,
) -> None:
    """Create a vhost (rabbitmqctl add_vhost: no one gets permissions on it). The API grants
    the user who creates a vhost full permissions, as RabbitMQ's does; the command takes that
    grant back."""
    path = f"/api/vhosts/{segment(name)}"

    def body() -> None:
        say(f'Adding vhost "{name}" ...')
        client = Client(url)
        created = not _exists(client, path)
        client.request("PUT", path, {"description": description, "tags": tags})
        if created:
            grant = f"/api/permissions/{segment(name)}/{segment(client.user)}"
            try:
                client.request("DELETE", grant)
            except ApiFailure as failure:
                if failure.status != 404:
                    raise

    run(body)


def _exists(client: Client, path: str) -> bool:
    try:
        client.get(path)
    except ApiFailure as failure:
        if failure.status == 404:
            return False
        raise
    return True


@vhosts_cli.command("delete")
def vhosts_delete(
    name: Annotated[str, typer.Argument(help="Vhost name.")], url: Url = DEFAULT_URL
) -> None:
    """Delete a vhost with everything in it (rabbitmqctl delete_vhost); its connections close."""
    path = f"/api/vhosts/{segment(name)}"
    _delete(url, f'Deleting vhost "{name}" ...', path, f"vhost '{name}'")


@vhosts_cli.command("list")
def vhosts_list(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """List vhosts (rabbitmqctl list_vhosts)."""
    _list(url, "/api/vhosts", as_json, "Vhosts", ["name", "description", "tags"])
