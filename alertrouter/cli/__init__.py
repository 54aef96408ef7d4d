"""The command line: `alertrouter serve | check-config | db` and the parser (`main.py`), with every other subcommand
(simulate, routes, render, send-test, digest, oncall, hash-password) in a module of its own."""
