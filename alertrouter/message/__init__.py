"""What the engine tells, from the outbox to a channel, the console and the digest: the message, its typed
facts, and the words it is told in. No I/O."""
