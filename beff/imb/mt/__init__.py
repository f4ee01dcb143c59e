"""IMB-MT: beff does not measure it; ``beff import`` reads its text."""
