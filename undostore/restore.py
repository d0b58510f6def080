"""Restore (placeholder until issue 4 lands: replaced by the real module)."""


def recover_pending(workspace) -> None:  # noqa: ANN001
    return None
