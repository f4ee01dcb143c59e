"""The multi-host tests share :mod:`tests.multihost.cluster` (its assertions are rewritten
as a test module's are)."""

import pytest

pytest.register_assert_rewrite("tests.multihost.cluster")
