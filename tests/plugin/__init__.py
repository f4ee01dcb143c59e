"""A beff plug-in outside the package (``beff_toy``), and how the tests install it."""
