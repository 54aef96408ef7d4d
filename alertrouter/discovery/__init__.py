"""Node lookup: which address or pod is which node, and the nodes' topology labels, read from
Prometheus (`topology.prometheus`); pure parsing in `parse`, bookkeeping in `book`, I/O in `prometheus`."""
