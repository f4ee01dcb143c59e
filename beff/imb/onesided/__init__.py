"""IMB-EXT and IMB-RMA: one-sided communication."""
