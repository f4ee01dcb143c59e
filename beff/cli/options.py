"""The typer side of the shared options: generated from their one declaration (the rules of
:class:`beff.core.config.RunConfig`: flags, help, choices), so every command that takes an
option spells, explains and checks it alike, and ``beff imb`` parses the same flags."""

from __future__ import annotations

from typing import Any

import typer

from beff.core import config
from beff.core.config import RULES


def option(key: str, help: str | None = None, metavar: str | None = None) -> Any:
    """A typer option for config key ``key``, from its declaration (``help`` overrides)."""
    rule = RULES[key]
    text = help or rule.help
    text = text[0].upper() + text[1:] + "."
    flags = list(rule.flags)
    if rule.kind is bool and len(flags) == 2 and flags[1] == "--no-" + flags[0][2:]:
        flags = [f"{flags[0]}/{flags[1]}"]
    if rule.choices and metavar is None:
        metavar = f"<{'|'.join(rule.choices)}>"
    return typer.Option(*flags, help=text, metavar=metavar,
                        show_default=False) if metavar else typer.Option(
        *flags, help=text, show_default=False)


def given(values: dict[str, Any]) -> dict[str, Any]:
    """The options the user typed (typer gives None for the others)."""
    return {k: v for k, v in values.items() if v is not None}


def run_checked(suite: str, overrides: dict[str, Any],
                flags: dict[str, str] | None = None) -> None:
    """Check every override by the rule TOML values meet (an error names the flag: ``flags``
    maps keys to their spelling where it is not the rule's own), then run ``suite``. The
    runner (h5py, numpy) is imported only after the flags are checked."""
    for key, value in overrides.items():
        if key in config.RULES:
            config.check_value(key, value, (flags or {}).get(key, config.flag_of(key)))
    from beff import runner

    runner.run(suite, overrides)
