"""``beff map``: the network's bandwidth and latency between every pair of nodes (mpiGraph's
shifts), with the nodes and links far worse than the rest named."""
