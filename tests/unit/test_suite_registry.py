"""Where beff finds its suites: the entry points of group ``beff.suites`` (pyproject.toml),
listed by each suite's declared order, beff's own before a plug-in's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

from beff.core import suite as suites

# As `beff list` has always shown them: IMB's components, then b_eff_io, b_eff, the map.
BUILTIN = ["mpi1", "nbc", "mpi4", "ext", "rma", "p2p", "mt", "io", "beffio", "beff", "map"]


def test_every_entry_point_names_its_suite() -> None:
    found = {e.name: e.load() for e in entry_points(group=suites.GROUP)}
    assert set(BUILTIN) <= set(found), "reinstall beff (pip install -e .) for its entry points"
    for name, suite in found.items():
        assert isinstance(suite, suites.Suite) and suite.name == name
        assert suites.get(name) is suite


def test_beffs_own_suites_come_first_in_their_order() -> None:
    names = [s.name for s in suites.suites()]
    assert names[:len(BUILTIN)] == BUILTIN
    assert all(s.order < suites.Suite.order for s in suites.suites()[:len(BUILTIN)])


def test_one_of_beffs_own_suites_is_found_without_reading_every_distribution() -> None:
    """``beff imb nbc`` and ``beff io`` on every rank: beff's own entry points name the
    suite, and the other distributions' (the plug-ins') are read only for a name beff
    lacks."""
    code = textwrap.dedent("""
        import importlib.metadata as m
        real, scans = m.entry_points, []
        def counted(**kw):
            scans.append(kw)
            return real(**kw)
        m.entry_points = counted
        from beff.core import suite
        found = suite.named("nbc")
        print(found.name, sorted(suite._SUITES), len(scans))
        print(suite.by_command("beff io").name, len(scans))
        print(suite.named("no-such-suite"), len(scans), "mpi1" in suite._SUITES)
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    own, command, other = proc.stdout.splitlines()
    assert own == "nbc ['mpi4', 'nbc'] 0"  # the module declares both, and nothing was scanned
    assert command == "beffio 0"  # `beff io`: beff's own suites, no scan either
    assert other == "None 1 True"  # a name beff lacks: every distribution's, once
