"""Pure noise-reduction stages: node identity, inhibition, aggregation, throttling, routing. No I/O."""

from __future__ import annotations
