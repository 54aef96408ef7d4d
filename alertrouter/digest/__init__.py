"""The weekly digest: ISO-week periods in a receiver's time zone, the week's numbers, charts, the email.

Kept import-light on purpose: `ruleset.schema` validates schedules with `digest.period`, so importing
this package must not pull in the store, the charts or the templates.
"""
