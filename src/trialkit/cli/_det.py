"""``det``: Determined's CLI for the commands that map onto ``trialkit``'s, so copied shell
scripts keep working. Each ``det`` command line is translated into a ``trialkit`` one and run;
a command or option with no trialkit equivalent gets one line saying what to use instead."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import click


class Unmapped(Exception):
    """A det command or option trialkit does not have; the message says what to use."""


@dataclass(frozen=True)
class Cmd:
    """How one ``det GROUP SUB`` maps: trialkit's words, positionals, and options."""

    target: tuple[str, ...]
    positionals: tuple[str, ...]
    #: det option -> (trialkit option, takes a value); trialkit option "" drops it.
    options: dict[str, tuple[str, bool]] = field(default_factory=dict)
    optional: tuple[str, ...] = ()


_JSON = {"--json": ("--json", False)}
_LOGS = {
    "-f": ("-f", False),
    "--follow": ("-f", False),
    "--tail": ("--tail", True),
    "--level": ("--level", True),
    "--rank-id": ("--rank", True),
}

EXPERIMENT: dict[str, Cmd] = {
    "list": Cmd(("experiment", "list"), (), {"-a": ("-a", False), "--all": ("-a", False), **_JSON}),
    "describe": Cmd(("experiment", "describe"), ("EXPERIMENT_IDS",), dict(_JSON)),
    "logs": Cmd(("experiment", "logs"), ("EXPERIMENT_ID",), dict(_LOGS)),
    "create": Cmd(
        ("experiment", "create"),
        ("CONFIG_FILE", "MODEL_DEF"),
        {
            "--config": ("--config", True),
            "-f": ("-f", False),
            "--follow-first-trial": ("-f", False),
            "--paused": ("--paused", False),
        },
    ),
    "list-trials": Cmd(("trial", "list"), ("EXPERIMENT_ID",), dict(_JSON)),
    "download-model-def": Cmd(
        ("experiment", "download-model-def"),
        ("EXPERIMENT_ID",),
        {"--output-dir": ("--output-dir", True), "-o": ("--output-dir", True)},
    ),
    "list-checkpoints": Cmd(("checkpoint", "list"), ("EXPERIMENT_ID",), dict(_JSON)),
    "label add": Cmd(("experiment", "label", "add"), ("EXPERIMENT_ID", "LABEL")),
    "label remove": Cmd(("experiment", "label", "remove"), ("EXPERIMENT_ID", "LABEL")),
    "set description": Cmd(("experiment", "set", "description"), ("EXPERIMENT_ID", "DESCRIPTION")),
    **{
        action: Cmd(("experiment", target), ("EXPERIMENT_ID",))
        for action, target in (
            ("pause", "pause"),
            ("activate", "activate"),
            ("unpause", "activate"),
            ("kill", "kill"),
            ("cancel", "kill"),
            ("archive", "archive"),
            ("unarchive", "unarchive"),
        )
    },
}
#: det subcommands of two words ("det e label add"): the first word.
TWO_WORDS = ("label", "set")
SUB_ALIASES = {
    "experiment": {"ls": "list", "lt": "list-trials", "lc": "list-checkpoints"},
    "checkpoint": {"ls": "list"},
}

TRIAL: dict[str, Cmd] = {
    "describe": Cmd(("trial", "describe"), ("TRIAL_ID",), dict(_JSON)),
    "logs": Cmd(("trial", "logs"), ("TRIAL_ID",), dict(_LOGS)),
    "list": Cmd(("trial", "list"), ("EXPERIMENT_ID",), dict(_JSON)),
}

CHECKPOINT: dict[str, Cmd] = {
    "list": Cmd(("checkpoint", "list"), ("EXPERIMENT_ID",), dict(_JSON)),
    "describe": Cmd(("checkpoint", "describe"), ("UUID",), dict(_JSON)),
    "download": Cmd(
        ("checkpoint", "download"),
        ("UUID",),
        {"-o": ("-o", True), "--output-dir": ("-o", True), "-q": ("", False)},
    ),
}

PREVIEW = Cmd(("experiment", "preview"), ("CONFIG_FILE",), {"--config": ("--config", True)})

#: det commands with no trialkit form, and what to do instead.
UNMAPPED = {
    "experiment config": "'trialkit experiment describe ID --json' shows the config",
    "experiment download": "'trialkit checkpoint list ID', then 'trialkit checkpoint download UUID'",
    "experiment continue": "create a new experiment that warm-starts from the checkpoint"
    " of a trial: 'trialkit trial continue TRIAL_ID'",
    "experiment wait": "'trialkit experiment create ... --follow' waits for the end",
    "experiment delete": "'trialkit experiment delete ID' deletes it with its checkpoints",
    "experiment move": "trialkit has no workspaces or projects",
    "experiment label": "'det e label add|remove ID LABEL'",
    "experiment set": "trialkit sets only the description: 'det e set description ID TEXT'",
    "experiment delete-tb-files": "not supported by trialkit",
    "trial kill": "trialkit stops whole experiments: 'det e kill EXPERIMENT_ID'",
    "trial download": "'det checkpoint download UUID' ('det t describe ID' lists the UUIDs)",
    "checkpoint delete": "'trialkit checkpoint delete UUID...'",
    "deploy": "no cluster to deploy: 'trialkit master up' starts the local master",
    "master": "'trialkit master status|up|down'",
    "user": "no users: the local master authenticates with a token in TRIALKIT_HOME",
    "auth": "no users: the local master authenticates with a token in TRIALKIT_HOME",
    "token": "no users: the local master authenticates with a token in TRIALKIT_HOME",
    "agent": "no agents: trials run on this machine ('trialkit master status' shows the slots)",
    "slot": "no agents: trials run on this machine ('trialkit master status' shows the slots)",
    "resource-pool": "trialkit has one local resource pool",
}

#: det options with no trialkit form, and what to do instead.
OPTION_NOTES = {
    "--test-mode": "test the Trial locally: det.experimental.test_one_batch(MyTrial, config)",
    "-t": "test the Trial locally: det.experimental.test_one_batch(MyTrial, config)",
    "--local": "run the training script with python directly (local mode)",
    "--csv": "use --json",
    "--best": "'trialkit checkpoint list ID --best N'",
    "--head": "use --tail N",
    "--project_id": "trialkit has no workspaces or projects",
    "--template": "trialkit has no templates; write the config in full",
}

#: Determined spells these "e|xperiment", "t|rial", "c|heckpoint": the word or its letter.
GROUPS = {"e": "experiment", "experiment": "experiment", "t": "trial", "trial": "trial"}
GROUPS.update(c="checkpoint", checkpoint="checkpoint")
TABLES = {"experiment": EXPERIMENT, "trial": TRIAL, "checkpoint": CHECKPOINT}
_GLOBAL_WITH_VALUE = ("-m", "--master", "-u", "--user")


def _strip_globals(args: list[str]) -> list[str]:
    """Drop det's -m/--master and -u/--user (trialkit uses the master of TRIALKIT_HOME)."""
    out = list(args)
    while out and out[0].split("=", 1)[0] in _GLOBAL_WITH_VALUE:
        flag = out.pop(0)
        value = flag.split("=", 1)[1] if "=" in flag else (out.pop(0) if out else "")
        click.echo(
            f"det: ignoring {flag.split('=', 1)[0]} {value}: trialkit uses the master of "
            "TRIALKIT_HOME",
            err=True,
        )
    return out


def _convert(where: str, cmd: Cmd, args: list[str]) -> list[str]:
    """det's arguments for ``cmd`` as trialkit's."""
    positionals: list[str] = []
    options: list[str] = []
    it = iter(args)
    for arg in it:
        if not arg.startswith("-") or arg == "-" or arg.lstrip("-").isdigit():
            positionals.append(arg)
            continue
        name, eq, inline = arg.partition("=")
        if name not in cmd.options:
            note = OPTION_NOTES.get(name, f"see 'trialkit {' '.join(cmd.target)} --help'")
            raise Unmapped(f"'det {where} {name}' is not supported by trialkit; {note}")
        target, takes_value = cmd.options[name]
        value = inline if eq else (next(it, None) if takes_value else None)
        if takes_value and value is None:
            raise Unmapped(f"'det {where} {name}' needs a value")
        if target:
            options += [target, value] if takes_value and value is not None else [target]
    if len(positionals) != len(cmd.positionals):
        usage = " ".join(cmd.positionals)
        raise Unmapped(f"usage: det {where} {usage} (got {len(positionals)} arguments)")
    return [*cmd.target, *positionals, *options]


def translate(args: list[str]) -> list[list[str]]:
    """The trialkit command lines (usually one) that a det command line stands for."""
    args = _strip_globals(args)
    if not args or args[0] in ("-h", "--help", "help"):
        return []
    head, rest = args[0], args[1:]
    if head == "preview-search":
        return [_convert("preview-search", PREVIEW, rest)]
    if head == "version" or head == "--version":
        return [["--version"]]
    group = GROUPS.get(head)
    if group is None:
        hint = UNMAPPED.get(head, "not supported by trialkit")
        raise Unmapped(f"'det {head}' has no trialkit equivalent: {hint}")
    if not rest or rest[0] in ("-h", "--help"):
        if group == "experiment" and not rest:
            rest = ["list"]  # `det e` lists experiments, as in Determined
        else:
            return [[group, "--help"]]
    sub = SUB_ALIASES.get(group, {}).get(rest[0], rest[0])
    if sub in TWO_WORDS and len(rest) > 1 and not rest[1].startswith("-"):
        sub, rest = f"{sub} {rest[1]}", [f"{rest[0]} {rest[1]}", *rest[2:]]
    cmd = TABLES[group].get(sub)
    if cmd is None:
        hint = UNMAPPED.get(f"{group} {sub.split()[0]}", "not supported by trialkit")
        raise Unmapped(f"'det {head} {rest[0]}' has no trialkit equivalent: {hint}")
    converted = _convert(f"{head} {rest[0]}", cmd, rest[1:])
    if group == "experiment" and sub == "describe":
        n = len(cmd.target)  # Determined takes a comma-separated list of ids
        ids = [i for i in converted[n].split(",") if i]
        return [[*converted[:n], i, *converted[n + 1 :]] for i in ids]
    return [converted]


def _help() -> str:
    rows = [
        ("det e|experiment create CONFIG MODEL_DIR [-f] [--paused]", "trialkit experiment create"),
        ("det e list|describe|logs|pause|activate|kill|archive", "trialkit experiment ..."),
        ("det e cancel ID / det e unpause ID", "trialkit experiment kill / activate"),
        ("det e list-trials|lt ID, det t describe|logs ID", "trialkit trial list / ..."),
        ("det e list-checkpoints|lc ID, det checkpoint ...", "trialkit checkpoint ..."),
        ("det e label add|remove ID LABEL", "trialkit experiment label add|remove"),
        ("det e set description ID TEXT", "trialkit experiment set description"),
        ("det preview-search CONFIG", "trialkit experiment preview CONFIG"),
    ]
    width = max(len(d) for d, _ in rows)
    lines = ["det: Determined's CLI on trialkit (the commands that map).", ""]
    lines += [f"  {d.ljust(width)}  ->  {t}" for d, t in rows]
    lines += ["", "Other det commands print what to use instead. See 'trialkit --help'."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``det`` console script."""
    from . import main as trialkit_main

    try:
        runs = translate(sys.argv[1:] if argv is None else argv)
    except Unmapped as e:
        click.echo(f"det: error: {e}", err=True)
        sys.exit(2)
    if not runs:
        click.echo(_help())
        sys.exit(0)
    for run in runs[:-1]:  # `det e describe 1,2`: one describe per id
        try:
            trialkit_main(run)
        except SystemExit as e:
            if e.code not in (0, None):
                raise
    trialkit_main(runs[-1])


if __name__ == "__main__":
    main()
