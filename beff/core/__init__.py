"""Core: MPI start-up, bindings, config, metadata, buffers."""
