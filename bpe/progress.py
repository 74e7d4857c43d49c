"""Progress bars (tqdm), off unless asked for."""
from __future__ import annotations


class NoProgress:
    """What ``progress_bar`` gives when it is off: the bar's calls, doing nothing.
    tqdm is then not imported at all (importing it, with the asyncio it pulls
    in, took 0.07 s of a fresh process's first ``encode_file``, all before any
    worker started)."""

    def __enter__(self) -> "NoProgress":
        return self

    def __exit__(self, *exc_info) -> None:
        pass

    def update(self, n=1) -> None:
        pass


def progress_bar(enabled: bool, total, description: str, unit: str):
    """A tqdm bar over ``total`` units (None: unknown), or a ``NoProgress`` unless ``enabled``."""
    if not enabled:
        return NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit=unit, unit_scale=True)
