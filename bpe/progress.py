"""Progress bars (tqdm), off unless asked for."""
from __future__ import annotations


def progress_bar(enabled: bool, total, description: str, unit: str):
    """A tqdm bar over ``total`` units (None: unknown), disabled unless ``enabled``."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit=unit, unit_scale=True, disable=not enabled)
