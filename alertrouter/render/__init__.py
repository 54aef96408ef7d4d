"""Messages as people read them: the template context of a notification (`context`), the sandboxed
Jinja2 environments that render `templates/<channel>/<kind>.<fmt>.j2` within a vendor's size
(`templates`), and one sample notification per message kind (`samples`)."""
