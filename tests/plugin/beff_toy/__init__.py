"""A toy plug-in outside beff: what adding a suite takes (tests/plugin/install.py installs
it through its entry points, as pip installs any plug-in)."""
