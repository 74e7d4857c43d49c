"""``TokenDataset``: training windows from a token array: random batches, the
``get_batch`` every nanoGPT-style training script writes by hand, or an epoch
of consecutive windows in order, split among data-parallel ranks as PyTorch's
``DistributedSampler`` splits a dataset.

>>> import numpy as np
>>> data = TokenDataset(np.arange(100, dtype=np.uint16), block_size=4, seed=0)
>>> x, y = data.get_batch(2)
>>> x.shape, y.shape, bool((y[:, :-1] == x[:, 1:]).all())
((2, 4), (2, 4), True)
>>> len(data), data[0][0].tolist(), data[-1][1].tolist()
(24, [0, 1, 2, 3], [93, 94, 95, 96])
>>> [int(x[0]) for x, y in data.epoch(rank=1, world_size=2)][:3]
[4, 12, 20]
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from bpe.corpus.token_array import open_tokens, read_document_index


class TokenDataset:
    """Windows of ``block_size`` tokens from a token array, with their next tokens.

    Parameters
    ----------
    source : path or array
        A token array written by ``encode_file`` (memory-mapped, checked against
        its sidecar) or any 1-D integer array.
    block_size : int
        Tokens per window.
    within_documents : bool
        Never let a window (with its target) run across the start of a
        document: windows are drawn from documents long enough to hold one,
        in proportion to how many windows each holds. Needs the document index
        (``document_starts``, read from the sidecar for a path).
    seed : int or None
        The same seed gives the same batches.
    tensors : "numpy" or "torch"
        What ``get_batch`` returns (int64 either way, as embeddings index with).
    """

    def __init__(self, source, block_size: int, *, within_documents: bool = False,
                 document_starts: Optional[np.ndarray] = None, seed: Optional[int] = 0,
                 tensors: str = "numpy"):
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive int, got {block_size!r}")
        if tensors not in ("numpy", "torch"):
            raise ValueError(f"tensors must be 'numpy' or 'torch', got {tensors!r}")
        if isinstance(source, np.ndarray):
            self.tokens = source
        else:
            self.tokens = open_tokens(source)
            if within_documents and document_starts is None:
                document_starts = read_document_index(source)
        if self.tokens.ndim != 1 or self.tokens.dtype.kind not in "iu":
            raise ValueError(f"tokens must be a 1-D integer array, not {self.tokens.dtype} of shape "
                             f"{self.tokens.shape}")
        self.block_size = block_size
        self.tensors = tensors
        self.rng = np.random.default_rng(seed)
        n = len(self.tokens)
        if within_documents:
            starts = np.asarray(document_starts if document_starts is not None else [0], dtype=np.int64)
            bounds = np.unique(np.concatenate([[0], starts[(starts > 0) & (starts < n)], [n]]))
            self._first = bounds[:-1]
            self._count = np.maximum(bounds[1:] - bounds[:-1] - block_size, 0)   # windows per document
        else:
            self._first = np.zeros(1, dtype=np.int64)
            self._count = np.array([max(n - block_size, 0)], dtype=np.int64)
        total = int(self._count.sum())
        if total == 0:
            raise ValueError(f"no window of {block_size} tokens (plus its target) fits in "
                             f"{'any document of ' if within_documents else ''}{n} tokens")
        self._cumulative = np.cumsum(self._count)
        self._within = within_documents
        self._sequential: Optional[np.ndarray] = None

    @property
    def n_windows(self) -> int:
        """How many distinct windows there are to draw from."""
        return int(self._cumulative[-1])

    def __repr__(self) -> str:
        return (f"TokenDataset({len(self.tokens)} tokens, block_size={self.block_size}, {len(self)} windows an "
                f"epoch{', within documents' if len(self._first) > 1 or self._within else ''})")

    # ------------------------------------------------------------ an epoch in order

    def _epoch_starts(self) -> np.ndarray:
        """Where the windows of an epoch start: consecutive, not overlapping,
        each with its target inside the array (and inside its document)."""
        if self._sequential is None:
            parts = [first + np.arange(0, count, self.block_size, dtype=np.int64)
                     for first, count in zip(self._first.tolist(), self._count.tolist()) if count > 0]
            self._sequential = np.concatenate(parts) if parts else np.empty(0, np.int64)
        return self._sequential

    def __len__(self) -> int:
        """Windows in an epoch (``epoch``, iteration, indexing)."""
        return len(self._epoch_starts())

    def __getitem__(self, index):
        """``(x, y)`` of the epoch's window ``index`` (an int; negative counts from
        the end), each ``(block_size,)`` int64."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"a window is indexed by an int, not {type(index).__name__}")
        starts = self._epoch_starts()
        if not -len(starts) <= index < len(starts):
            raise IndexError(f"window {index} is out of range for {len(starts)} windows")
        return self._windows(starts[[int(index)]], squeeze=True)

    def __iter__(self):
        return self.epoch()

    def epoch(self, *, rank: int = 0, world_size: int = 1, shuffle: bool = False, batch_size: Optional[int] = None):
        """One epoch of windows in order (or shuffled by the dataset's seed), this
        ``rank``'s share of ``world_size``: every ``world_size``-th window from
        ``rank`` on, each rank as many (the last few dropped, as ``drop_last``),
        so data-parallel ranks see disjoint windows and step together. Yields
        ``(x, y)`` windows, or batches of ``batch_size`` of them."""
        if not (isinstance(world_size, int) and world_size >= 1 and isinstance(rank, int)
                and 0 <= rank < world_size):
            raise ValueError(f"rank {rank!r} must be in [0, world_size={world_size!r})")
        starts = self._epoch_starts()
        if shuffle:
            starts = starts[self.rng.permutation(len(starts))]
        per_rank = len(starts) // world_size
        mine = starts[rank::world_size][:per_rank]
        if batch_size is None:
            for start in mine:
                yield self._windows(np.array([start]), squeeze=True)
            return
        for at in range(0, len(mine), batch_size):
            yield self._windows(mine[at:at + batch_size])

    def _windows(self, starts: np.ndarray, squeeze: bool = False):
        index = starts[:, None] + np.arange(self.block_size + 1)
        rows = np.asarray(self.tokens[index], dtype=np.int64)
        x, y = rows[:, :-1], rows[:, 1:]
        if squeeze:
            x, y = x[0], y[0]
        if self.tensors == "torch":
            import torch

            return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))
        return x, y

    def window_starts(self, batch_size: int) -> np.ndarray:
        """Where ``batch_size`` random windows start (int64)."""
        draws = self.rng.integers(0, self.n_windows, size=batch_size)
        document = np.searchsorted(self._cumulative, draws, side="right")
        before = np.where(document > 0, self._cumulative[document - 1], 0)
        return self._first[document] + (draws - before)

    def get_batch(self, batch_size: int):
        """``(x, y)``: ``batch_size`` random windows and the same windows one token
        later, each ``(batch_size, block_size)`` int64."""
        return self._windows(self.window_starts(batch_size))
