"""State a rendered Dockerfile leaves behind that a later step cannot satisfy, found before any build.

Three kinds, each a fault that only shows on a real host (they were found by review, not by a build):
  secret    a file written in the image, or an ENV value, that names a BuildKit secret mount
            (/run/secrets/...): later RUNs do not mount the secret, and a config naming a missing file
            fails them (apt refuses HTTPS when its Acquire::https::CaInfo file is absent).
  account   useradd / groupadd / userdel / usermod against the base image's accounts (matrix.yaml
            `os_images`): a uid, gid or name the image already has, a group that does not exist, and
            ids left for the tool to pick (groupadd without --gid, groupadd -f, useradd without --uid,
            a user group whose gid cannot be its uid): such an id differs between bases and rebuilds.
  specifier an unquoted version specifier in a shell command (`pip install pyzmq>=25`): the shell reads
            `>=25` as a redirection and installs an unpinned package into a file named `=25`.
Scripts the image runs from its context (rocmig/*.sh) are read like RUN lines.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from buildctl.model import OsFacts

SECRETS = "/run/secrets/"
SAFE_TARGETS = ("/run/secrets/", "/tmp/", "/dev/", "/proc/")
CONTROL = {"&&", "||", ";", "|", "&", "(", ")", ";;", "{", "}"}
SPECIFIER = re.compile(r"[A-Za-z_\]][<>]=?[0-9]")
ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(\S+)\s*$", re.MULTILINE)


@dataclass
class Accounts:
    """Users (name -> uid) and groups (name -> gid) of an image as its build steps leave them."""

    users: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, os: OsFacts | None) -> Accounts:
        """The accounts of an OS image's facts; empty when matrix.yaml lists none for it."""
        return cls(dict(os.users), dict(os.groups)) if os else cls()

    def copy(self) -> Accounts:
        return Accounts(dict(self.users), dict(self.groups))


def instructions(dockerfile: str) -> list[tuple[int, str, str]]:
    """(line number, keyword, arguments) of each instruction, continuation lines joined, comments dropped."""
    out: list[tuple[int, str, str]] = []
    lines = dockerfile.splitlines()
    i = 0
    while i < len(lines):
        start, text = i + 1, lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1]
            if lines[i].lstrip().startswith("#"):  # comment lines inside an instruction are dropped
                text += "\\"
                continue
            text += " " + lines[i]
        i += 1
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, args = stripped.partition(" ")
        out.append((start, keyword.upper(), args.strip()))
    return out


def _run_command(args: str) -> str:
    """A RUN's shell command without its --mount / --network / --security flags."""
    return re.sub(r"^(\s*--\S+\s+)+", "", args)


def _commands(shell: str) -> list[list[str]]:
    """Simple commands of a shell text, split at control operators (quotes removed, as the shell does)."""
    lexer = shlex.shlex(shell.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokens:
        if token in CONTROL:
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands


def _written_files(command: list[str]) -> list[str]:
    targets = []
    for i, token in enumerate(command):
        if token in (">", ">>") and i + 1 < len(command):
            targets.append(command[i + 1])
    if command and command[0] == "tee":
        targets += [t for t in command[1:] if not t.startswith("-")]
    return targets


def secret_problems(shell: str, where: str) -> list[str]:
    """Writes and exports that carry a /run/secrets/ path out of the RUN that mounts it.

    Simple `NAME=value` assignments of the text are expanded first (a script's `ca=/run/secrets/x`).
    """
    variables = dict(ASSIGNMENT.findall(shell))
    expanded = shell
    for name, value in sorted(variables.items(), key=lambda kv: -len(kv[0])):
        expanded = expanded.replace("${" + name + "}", value).replace("$" + name, value)
    out = []
    for command in _commands(expanded):
        if not any(SECRETS in token for token in command):
            continue
        for target in _written_files(command):
            if not target.startswith(SAFE_TARGETS):
                out.append(f"{where}: writes {target} naming a secret mount ({SECRETS}...), which later "
                           f"steps do not have")
    return out


def specifier_problems(shell: str, where: str) -> list[str]:
    """Unquoted `name>=1` / `name<2` in a shell text (read by the shell as a redirection)."""
    unquoted = re.sub(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "''", shell)
    return [f"{where}: unquoted version specifier {m.group(0)!r}... is a shell redirection; quote it"
            for m in SPECIFIER.finditer(unquoted)]


def _option(command: list[str], *names: str) -> str | None:
    for i, token in enumerate(command):
        for name in names:
            if token == name and i + 1 < len(command):
                return command[i + 1]
            if name.startswith("--") and token.startswith(name + "="):
                return token.split("=", 1)[1]
    return None


def account_problems(shell: str, accounts: Accounts, where: str) -> list[str]:
    """Apply useradd / groupadd / userdel / usermod of a shell text to `accounts`; return the clashes."""
    out: list[str] = []
    for command in _commands(shell):
        tool = command[0] if command else ""
        if tool not in ("useradd", "groupadd", "userdel", "usermod") or len(command) < 2:
            continue
        name = command[-1]
        if tool == "groupadd":
            out += _groupadd_problems(command, name, accounts, where)
        elif tool == "useradd":
            uid = _option(command, "--uid", "-u")
            if name in accounts.users:
                out.append(f"{where}: useradd {name}: the image already has user {name}")
            if uid is None:
                out.append(f"{where}: useradd {name} without --uid takes whichever uid is free: give it a fixed uid")
            elif int(uid) in accounts.users.values():
                owner = next(u for u, v in accounts.users.items() if v == int(uid))
                out.append(f"{where}: useradd --uid {uid} {name}: uid {uid} is user {owner} in the image")
            out += _missing_groups(command, accounts, where, f"useradd {name}")
            primary = _option(command, "--gid", "-g")
            if primary is not None and primary not in accounts.groups and not primary.isdigit():
                out.append(f"{where}: useradd {name}: group {primary} does not exist in the image")
            accounts.users[name] = int(uid) if uid is not None else _free(accounts.users)
            if primary is None and name not in accounts.groups and "--no-user-group" not in command \
                    and "-N" not in command:
                if accounts.users[name] in accounts.groups.values():
                    owner = next(g for g, v in accounts.groups.items() if v == accounts.users[name])
                    out.append(f"{where}: useradd {name}: its own group cannot get gid {accounts.users[name]} "
                               f"(group {owner}) and takes whichever gid is free: create it with groupadd "
                               f"--gid and pass --gid")
                    accounts.groups[name] = _free(accounts.groups)
                else:
                    accounts.groups[name] = accounts.users[name]
        elif tool == "userdel":
            if name not in accounts.users:
                out.append(f"{where}: userdel {name}: the image has no user {name}")
            accounts.users.pop(name, None)
            accounts.groups.pop(name, None)
        else:
            if name not in accounts.users:
                out.append(f"{where}: usermod {name}: the image has no user {name}")
            out += _missing_groups(command, accounts, where, f"usermod {name}")
    return out


def _free(ids: dict[str, int]) -> int:
    """The id useradd / groupadd pick when given none: the lowest free one from 1000 (login.defs UID_MIN)."""
    taken = set(ids.values())
    return next(i for i in range(1000, 60000) if i not in taken)


def _groupadd_problems(command: list[str], name: str, accounts: Accounts, where: str) -> list[str]:
    """groupadd NAME: an existing name, a gid in use, no gid at all (whichever is free: a device group's
    gid then differs from build to build and from the value documented), or -f (which hides both: with
    a gid in use, -f makes groupadd pick another one silently). Applies it to `accounts`."""
    out: list[str] = []
    gid = _option(command, "--gid", "-g")
    if "-f" in command or "--force" in command:
        out.append(f"{where}: groupadd -f {name}: -f hides a clash (an existing group, or a gid in use: "
                   f"groupadd then picks another gid); the base's groups are known (matrix.yaml os_images)")
    if name in accounts.groups:
        if "-f" not in command and "--force" not in command:
            out.append(f"{where}: groupadd {name}: the image already has group {name}")
        return out
    if gid is None:
        out.append(f"{where}: groupadd {name} without --gid takes whichever gid is free: give it a fixed gid")
    elif int(gid) in accounts.groups.values():
        owner = next(g for g, v in accounts.groups.items() if v == int(gid))
        out.append(f"{where}: groupadd --gid {gid} {name}: gid {gid} is group {owner} in the image")
    accounts.groups[name] = int(gid) if gid is not None else _free(accounts.groups)
    return out


def _missing_groups(command: list[str], accounts: Accounts, where: str, what: str) -> list[str]:
    groups = _option(command, "--groups", "-G")
    if groups is None:
        return []
    return [f"{where}: {what}: group {g} does not exist in the image" for g in groups.split(",")
            if g and g not in accounts.groups]


def check_rendered(context: Path, accounts: Accounts) -> list[str]:
    """Every problem of one rendered cell (its Dockerfile and its rocmig/*.sh scripts).

    `accounts` is the parent image's final state (or the OS image's for a base cell); it is updated in
    place to this image's final state. Stage boundaries (FROM) of multi-stage files restart from a copy.
    """
    dockerfile = context / "Dockerfile"
    start = accounts.copy()
    current = accounts
    problems: list[str] = []
    for line, keyword, args in instructions(dockerfile.read_text(encoding="utf-8")):
        where = f"{dockerfile}:{line}"
        if keyword == "FROM":
            current.users, current.groups = dict(start.users), dict(start.groups)
        elif keyword == "RUN":
            shell = _run_command(args)
            problems += secret_problems(shell, where)
            problems += specifier_problems(shell, where)
            problems += account_problems(shell, current, where)
        elif keyword == "ENV" and SECRETS in args:
            problems.append(f"{where}: ENV names a secret mount ({SECRETS}...), absent after its RUN")
    for script in sorted((context / "rocmig").glob("*.sh")):
        text = script.read_text(encoding="utf-8")
        problems += secret_problems(text, str(script))
        problems += specifier_problems(text, str(script))
    return problems
