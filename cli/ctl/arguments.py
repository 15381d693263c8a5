"""rabbitmqctl's command line: general options anywhere (before or after the verb), the verb,
its own options and its positional arguments. Only the parsing; what a verb accepts is the
verb table's (verbs.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

# option spelling -> the name a verb declares it by; general options are accepted by every verb
GENERAL_VALUES = {
    "-n": "node",
    "--node": "node",
    "-p": "vhost",
    "--vhost": "vhost",
    "-t": "timeout",
    "--timeout": "timeout",
    "--formatter": "formatter",
    "--url": "url",
}
GENERAL_FLAGS = {
    "-q": "quiet",
    "--quiet": "quiet",
    "-s": "silent",
    "--silent": "silent",
    "-l": "longnames",
    "--longnames": "longnames",
    "--no-table-headers": "no_table_headers",
    "-?": "help",
    "--help": "help",
}
VERB_VALUES = {
    "--apply-to": "apply_to",
    "--priority": "priority",
    "--description": "description",
    "--tags": "tags",
    "--default-queue-type": "default_queue_type",
    "--format": "format",
}
VERB_FLAGS = {
    "--if-empty": "if_empty",
    "-e": "if_empty",
    "--if-unused": "if_unused",
    "-u": "if_unused",
    "--online": "online",
    "--offline": "offline",
    "--local": "local",
    "--skip-if-unchanged": "skip_if_unchanged",
}


class UsageError(Exception):
    """A command line the real tool refuses in its argument validation: exit code 64 (EX_USAGE),
    or 65 (EX_DATAERR) for a file argument that does not exist."""

    def __init__(self, message: str, code: int = 64) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass
class Invocation:
    """One parsed command line."""

    argv: list[str]
    verb: str | None = None
    args: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    unknown: list[str] = field(default_factory=list)

    @property
    def quiet(self) -> bool:
        return bool({"quiet", "silent"} & self.flags)

    @property
    def silent(self) -> bool:
        return "silent" in self.flags

    @property
    def vhost(self) -> str:
        return self.values.get("vhost", "/")

    @property
    def formatter(self) -> str:
        return self.values.get("formatter", "table")

    def given(self) -> str:
        """The "Arguments given:" line of a usage error."""
        return " ".join(self.argv)


def parse(argv: list[str]) -> Invocation:
    """Split `argv`; an option that needs a value and has none is a usage error, an option no
    table knows is kept in `unknown` for the verb's check."""
    invocation = Invocation(list(argv))
    words = list(argv)
    positional: list[str] = []
    while words:
        word = words.pop(0)
        if word == "--":
            positional += words
            break
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        values = GENERAL_VALUES.get(name) or VERB_VALUES.get(name)
        flag = GENERAL_FLAGS.get(name) or VERB_FLAGS.get(name)
        if values is not None:
            if eq:
                invocation.values[values] = inline
            elif words:
                invocation.values[values] = words.pop(0)
            else:
                raise UsageError(f"option {name} needs a value")
        elif flag is not None and not eq:
            invocation.flags.add(flag)
        elif word.startswith("-") and len(word) > 1 and not _numeric(word):
            invocation.unknown.append(name)
        else:
            positional.append(word)
    if positional:
        invocation.verb, invocation.args = positional[0], positional[1:]
    return invocation


def _numeric(word: str) -> bool:
    return word[1:].replace(".", "", 1).isdigit()


def verb_options(invocation: Invocation) -> set[str]:
    """The verb-specific options given (their declared names)."""
    given = set(invocation.values) | invocation.flags
    specific = set(VERB_VALUES.values()) | set(VERB_FLAGS.values())
    return given & specific
