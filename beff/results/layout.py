"""How a suite's typed record is stored (:class:`Layout`), apart from the HDF5 code that
stores it (:mod:`beff.results.archive`): a suite's record module declares its layout without
importing h5py, so the ranks that only measure never load it."""

from __future__ import annotations

from dataclasses import dataclass


# A typed record (b_eff's, b_eff_io's, a map's) is stored field by field: scalars as attributes,
# lists of names as string datasets, arrays as datasets with units and a description, dicts as
# JSON attributes. Each suite declares its record's Layout (core.suite.Suite.layout).
@dataclass(frozen=True)
class Layout:
    group: str
    cls: type
    scalars: tuple[str, ...]
    names: dict[str, str]
    arrays: dict[str, tuple[str, str]]
    bools: tuple[str, ...] = ()
    int_lists: tuple[str, ...] = ()
    json: tuple[str, ...] = ()
    bool_arrays: tuple[str, ...] = ()  # arrays among ``arrays`` of flags: 0/1, read as bools
