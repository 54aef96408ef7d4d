"""Importing another tool's configuration as alertrouter rules: `alertrouter import alertmanager`."""

from __future__ import annotations

from alertrouter.importer.convert import Imported, convert, import_file
from alertrouter.importer.report import Report
from alertrouter.importer.source import SourceError, read_source
from alertrouter.importer.write import OutputError, write_rules

__all__ = ["Imported", "OutputError", "Report", "SourceError", "convert", "import_file", "read_source", "write_rules"]
