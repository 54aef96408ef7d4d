"""Nodes in maintenance: what people ask for (`requests`) and how it is done (`service`)."""
