"""The weekly digest: ISO-week periods in a receiver's time zone, the week's numbers, charts, the email.

Configured by `ruleset.receivers.DigestConfig`, whose schedule and time zone `ruleset.schedule` parses and
checks (the rules never import this package; `digest.period` does the calendar arithmetic on the parsed
`Schedule`). Kept empty, so that importing `digest.period` alone does not pull in the store, the charts or
the templates.
"""
