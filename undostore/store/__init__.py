"""One root's private store: where it lives and its layout, the store lock, atomic and durable
writes, the stat cache, and the ids handed out recently. Builds on `git`."""
