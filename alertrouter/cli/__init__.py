"""The command line: `alertrouter serve | check-config | simulate | db | digest | hash-password | ...`
(`main.py`), with the subcommands that need more than a few lines in modules of their own."""
