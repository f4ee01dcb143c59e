"""The IMB-style benchmark engine shared by the IMB suites (``beff.imb``) and IMB-IO
(``beff.io``): the benchmark registry, the size/repetition schedule, the kernel context, the
driver that times batches, IMB's flags, and IMB's text and tables."""
