"""The command line of a suite, generated from its options' one declaration
(:mod:`beff.core.options`): the typer command of a suite with a command of its own
(``beff run``, ``beff io``, ``beff map``, a plug-in's ``beff NAME``), and the IMB-style
parser of ``beff imb SUITE`` (argparse, IMB's single-dash spellings, no abbreviations). Both
turn the typed text into values by the declaration's own rules, so an error names the flag as
typed, and a flag that a suite does not declare is refused while parsing, before MPI_Init."""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from beff.core.errors import UsageError
from beff.core.options import SHARED, Option, Values
from beff.core.suite import Suite

# ----------------------------------------------------------------------------- typer


def _annotation(o: Option, suite: Suite) -> Any:
    import typer

    flags = list(o.long_flags())
    if o.kind is bool and len(flags) == 2 and flags[1] == "--no-" + flags[0][2:]:
        flags = [f"{flags[0]}/{flags[1]}"]
    if o.kind is bool:
        kind: Any = bool
    elif o.repeat:
        kind = list[str]
    elif o.kind in (int, float) and o.text is None and type(o).parse is Option.parse:
        kind = o.kind  # else a syntax of its own (sizes with units): typed as text
    else:
        kind = str
    text = o.help_line()
    metavar = o.metavar or (f"<{'|'.join(o.choices)}>" if o.choices and o.kind is str else
                            {int: "N", float: "X"}.get(o.kind) if o.text is None else None)
    if o.key == "format":  # the formats this suite renders
        text = f"output: {' | '.join(suite.formats)} (default {suite.formats[0]})"
        metavar = f"<{'|'.join(suite.formats)}>"
    if "_" not in text.split(" ", 1)[0]:  # "b_eff's ..." stays as written
        text = text[0].upper() + text[1:]
    return Annotated[kind | None, typer.Option(*flags, help=text + ".",
                                               show_default=False, metavar=metavar)]


def typer_options(suite: Suite) -> list[Option]:
    """The options of ``suite``'s typer command: its own, then the shared ones it does not
    declare again."""
    own = [o for o in suite.options if not (o.toml_only or o.sets or o.positional or o.fixed)]
    return own + shared_of(suite)


def typer_command(suite: Suite, run: Callable[[Suite, dict[str, Any]], None]) -> Callable[
        ..., None]:
    """A typer command function for ``suite``: one parameter per option; the values typed
    are checked by their declarations, then ``run(suite, overrides)``."""
    opts = typer_options(suite)

    def command(**typed: Any) -> None:
        overrides: dict[str, Any] = {}
        for o in opts:
            value = typed.get(o.key)
            if value is None or value == []:
                continue
            flag = o.long_flags()[0]
            if isinstance(value, str) and (o.text is not None or o.kind is not str):
                overrides[o.key] = o.parse(value, flag)
            else:
                overrides[o.key] = o.check(value, flag)
        check_together(suite, overrides)
        overrides["argv"] = sys.argv[1:]
        run(suite, overrides)

    command.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(o.key, inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=_annotation(o, suite)) for o in opts])
    command.__name__ = suite.command.split()[-1]
    command.__doc__ = suite.title
    return command


def check_together(suite: Suite, overrides: dict[str, Any]) -> None:
    """The suite's rules that tie values together, on the defaults and the flags (the TOML
    file's values are checked again with them after MPI_Init)."""
    if "format" in overrides:
        suite.check_format(str(overrides["format"]))
    values = Values({o.key: o.default for o in suite.options if not o.sets})
    values.update({k: v for k, v in overrides.items() if k in values})
    suite.check_values(values, set(overrides))


# ----------------------------------------------------------------------------- launch


def launch_parser(prog: str, opts: Sequence[Option], names: str = "") -> argparse.ArgumentParser:
    """The argparse parser that every rank of a typer command that starts MPI uses (typer
    renders its ``--help`` alone): the same spellings as :func:`typer_command`'s, from the
    same declarations, so that no rank but 0 loads typer and rich, and every rank reaches the
    same verdict (one parser)."""
    p = _Parser(prog=prog, allow_abbrev=False, add_help=False)
    p.set_defaults(given=[])
    for o in opts:
        flags = o.long_flags()
        if o.kind is bool:
            p.add_argument(*flags, dest=o.key, nargs=0, action=_Given)
        else:
            p.add_argument(*flags, dest=o.key, action=_Given, metavar=o.metavar or "VALUE")
    if names:
        p.add_argument(names, nargs="*", action=_Given)
    return p


def parse_launch(prog: str, opts: Sequence[Option], argv: Sequence[str],
                 names: str = "") -> dict[str, Any]:
    """``argv`` of the command ``prog`` (``beff run``) as checked values by key, converted as
    :func:`typer_command` converts typer's values; the errors read as typer's (click's)."""
    parser = launch_parser(prog, opts, names)
    by_key = {o.key: o for o in opts}
    ns, rest = parser.parse_known_args(list(argv))
    if rest:
        token = rest[0]
        if token.startswith("-") and not _number(token):
            raise UsageError(f"No such option: {token} (see `{prog} --help`)")
        raise UsageError(f"Got unexpected extra argument ({token}) (see `{prog} --help`)")
    out: dict[str, Any] = {}
    for key, flag, value in ns.given:
        if key == names:
            out[key] = [*out.get(key, []), *value]
            continue
        o = by_key[key]
        if o.kind is bool:
            out[key] = o.check(not flag.startswith("--no-"), flag)
        elif o.repeat:
            out[key] = o.check([*out.get(key, []), value], flag)
        elif o.kind is str and o.text is None:
            out[key] = o.check(value, flag)  # as typed (typer's str: no lower-casing)
        else:
            out[key] = o.parse(value, flag)
    return out


def parse_suite_command(suite: Suite, argv: Sequence[str]) -> dict[str, Any]:
    """``beff NAME``'s flags (a suite with a command of its own: run, io, map, a plug-in's),
    checked, with the suite's rules that tie values together."""
    out = parse_launch(suite.command, typer_options(suite), argv)
    check_together(suite, out)
    return out


# ----------------------------------------------------------------------------- IMB style


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's errors, in beff's words
        needs = re.match(r"argument (\S+?)(?:/\S+)?: expected (?:one|at least one) argument",
                         message)
        if needs:
            raise UsageError(f"{needs.group(1)} needs a value")
        raise UsageError(message)


class _Given(argparse.Action):
    """Keeps each flag as typed, with its text, in the order given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        namespace.given.append((self.dest, option_string, values))


def imb_options(suite: Suite) -> list[Option]:
    """Every option ``beff imb SUITE`` takes: the suite's, then the shared ones it does not
    declare again."""
    return [*suite.options, *shared_of(suite)]


def shared_of(suite: Suite) -> list[Option]:
    """The shared options ``suite`` takes: those it neither declares again nor leaves
    unused."""
    keys = {o.key for o in suite.options}
    return [o for o in SHARED if o.key not in keys and o.key not in suite.unused]


def _imb_spellings(o: Option) -> tuple[str, ...]:
    return tuple(f for f in o.imb_flags())


def imb_parser(suite: Suite) -> argparse.ArgumentParser:
    """The argparse parser of ``beff imb SUITE``, from the suite's declarations."""
    p = _Parser(prog=f"beff imb {suite.name}", allow_abbrev=False, add_help=False)
    p.set_defaults(given=[])
    for o in imb_options(suite):
        if o.toml_only or o.fixed:
            continue
        if o.positional:
            p.add_argument(o.key, nargs="*", action=_Given, metavar=o.metavar or o.key)
            continue
        flags = _imb_spellings(o)
        switches = [f for f in flags if f.startswith("--")] if o.kind is bool else []
        valued = [f for f in flags if f not in switches]
        if switches:
            p.add_argument(*switches, dest=o.key, nargs=0, action=_Given)
        if valued:
            p.add_argument(*valued, dest=o.key, nargs="+" if o.words else None,
                           action=_Given, metavar=o.metavar or "VALUE")
    return p


def _canonical(argv: Sequence[str], flags: set[str]) -> list[str]:
    """IMB's flags are case-insensitive (``-MSGLOG``)."""
    return [t.lower() if t.startswith("-") and t.lower() in flags and t not in flags else t
            for t in argv]


def parse_imb(suite: Suite, argv: Sequence[str]) -> dict[str, Any]:
    """``beff imb SUITE``'s arguments as checked values by key (UsageError naming the flag as
    typed); a flag the suite does not have is refused here."""
    parser = imb_parser(suite)
    by_key = {o.key: o for o in imb_options(suite)}
    known = {f for o in by_key.values() if not (o.toml_only or o.fixed) for f in o.imb_flags()}
    args = _canonical(argv, known)
    for token in args:
        if token.startswith("-") and token not in known and not _number(token):
            raise UsageError(foreign(token, suite))
    ns = parser.parse_intermixed_args(args)
    out: dict[str, Any] = {}
    for key, flag, value in ns.given:
        o = by_key[key]
        if o.positional:
            names = [n for token in value for n in _names(token)]
            out[key] = [*out.get(key, []), *names]
        elif o.sets:
            parts = o.parse(value, flag)
            for part_key, part in parts.items():
                name = flag if len(parts) == 1 else f"{flag} {dict(o.sets)[part_key]}"
                out[part_key] = by_key[part_key].check(part, name)
        elif o.kind is bool and flag.startswith("--"):
            out[key] = not flag.startswith("--no-")
        elif o.repeat:
            out[key] = o.check([*out.get(key, []), value], flag)
        elif o.words:
            out[key] = o.parse(",".join(value), flag)
        else:
            out[key] = o.parse(value, flag)
    if not out.get("benchmarks", True):
        del out["benchmarks"]
    check_together(suite, out)
    return out


def _number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _names(token: str) -> list[str]:
    names = [t for t in token.replace(",", " ").split() if t]
    if not names:
        raise UsageError(f"empty benchmark name {token!r} (see `beff list`)")
    return names


def foreign(token: str, suite: Suite) -> str:
    """The error for a flag ``beff imb SUITE`` does not take: another IMB suite's (that IMB
    component lacks it), or no one's."""
    from beff.core import suite as suites

    owners = [s.name for s in suites.suites() if s.command.startswith("beff imb ")
              and any(token.lower() in o.imb_flags() for o in s.options
                      if not (o.toml_only or o.fixed))]
    name = suite.title.split()[0] if suite.title.startswith("IMB") else suite.command
    if owners:
        return (f"{token} is not an option of {name} (it is one of beff imb "
                f"{', '.join(owners)}; see `beff imb {suite.name} -help`)")
    return f"unknown option {token!r} (see `beff imb {suite.name} -help`)"


def imb_help(suite: Suite) -> str:
    """``beff imb SUITE -help``: its flags, from their declarations."""
    names = " [benchmark names]" if any(o.positional for o in suite.options) else ""
    lines = [f"usage: mpiexec -n P beff imb {suite.name} [flags]{names}", "",
             f"{suite.title}.", "", "Its flags:"]
    shared = {o.key for o in SHARED}
    for title, group in (("", [o for o in suite.options if o.key not in shared]),
                         ("beff's own (as in every command):", imb_options(suite)[
                             len(suite.options):])):
        if title:
            lines += ["", title]
        for o in group:
            if o.toml_only or o.positional or o.fixed:
                continue
            value = "" if o.kind is bool and o.imb_flags()[0].startswith("--") else (
                " on|off" if o.kind is bool else
                " " + (o.metavar or ("|".join(o.choices) if o.choices else
                                     {int: "N", float: "X"}.get(o.kind, "VALUE"))))
            lines.append(textwrap.fill(f"{' / '.join(o.imb_flags())}{value}: {o.help_line()}",
                                       width=92, initial_indent="  ",
                                       subsequent_indent="      "))
    return "\n".join(lines) + "\n"
