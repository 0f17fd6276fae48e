"""``codesign evaluate``: placeholder registration; filled in by its issue."""


def register(sub) -> None:
    pass
