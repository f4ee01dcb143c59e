"""A toy suite in one folder, outside beff: what adding a suite takes (``BEFF_PLUGINS``)."""
