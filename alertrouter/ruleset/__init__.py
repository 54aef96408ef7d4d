"""Loading and validating the user-edited configuration in `rules/` (what `check-config` checks)."""

from __future__ import annotations

from alertrouter.ruleset.errors import ConfigError, ConfigProblem
from alertrouter.ruleset.loader import load_ruleset, matcher_notes
from alertrouter.ruleset.schema import GlobalConfig, Ruleset

__all__ = ["ConfigError", "ConfigProblem", "GlobalConfig", "Ruleset", "load_ruleset", "matcher_notes"]
