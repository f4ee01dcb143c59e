"""Where beff finds its suites: the entry points of group ``beff.suites`` (pyproject.toml),
listed by each suite's declared order, beff's own before a plug-in's."""

from __future__ import annotations

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
