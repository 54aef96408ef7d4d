"""Messages as people read them: the template context of a notification (`context`), what a value
becomes in each output format (`escape`), the sandboxed Jinja2 environments (`environment`) in which
`templates/<channel>/<kind>.<fmt>.j2` render within a vendor's size (`templates`), and one sample
notification per message kind (`samples`)."""
