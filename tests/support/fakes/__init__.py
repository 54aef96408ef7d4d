"""Local stand-ins for the vendors alertrouter talks to, strict the way the real services are."""
