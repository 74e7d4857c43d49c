"""Byte strings as flat arrays: concatenated bytes (uint8) and offsets
(int64, one more than there are strings), the form the kernels take; and
``RankTable``, a vocabulary's ordinary tokens in that form with their ranks.
Each helper is one or two numpy steps, never a bytes object per string."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


def flatten(tokens: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``tokens`` concatenated (uint8) and where each starts and ends (int64 offsets):
    the flat form of byte strings that the kernels and ``RankTable`` take."""
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(token) for token in tokens], out=offsets[1:])
    return np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets


def take_pieces(data: np.ndarray, offsets: np.ndarray, indices) -> tuple[np.ndarray, np.ndarray]:
    """The pieces ``data[offsets[i]:offsets[i + 1]]`` for each of ``indices``, in that
    order, as new flat arrays: one numpy gather, no bytes object per piece."""
    indices = np.asarray(indices, dtype=np.int64)
    lengths = np.diff(offsets)[indices]
    taken = np.zeros(len(indices) + 1, dtype=np.int64)
    np.cumsum(lengths, out=taken[1:])
    # Byte k of the result comes from data[start of its piece + its place in it].
    positions = np.repeat(offsets[indices] - taken[:-1], lengths) + np.arange(taken[-1])
    return data[positions], taken


def with_headers(headers: np.ndarray, data: np.ndarray, offsets: np.ndarray) -> bytes:
    """Row i of ``headers`` (uint8, a row per piece) then piece i, for each i in turn:
    length-prefixed records as one bytes object, from two numpy scatters."""
    n, width = headers.shape
    lengths = np.diff(offsets)
    starts = np.arange(n, dtype=np.int64) * width + offsets[:-1]     # record i's first byte
    out = np.empty(n * width + int(offsets[-1]), dtype=np.uint8)
    out[(starts[:, None] + np.arange(width)).ravel()] = headers.ravel()
    out[np.repeat(starts + width - offsets[:-1], lengths) + np.arange(offsets[-1])] = data
    return out.tobytes()


class RankTable(NamedTuple):
    """Ordinary tokens as flat arrays, in rank order (a rank is the token's id):
    token i is ``token_data[token_offsets[i]:token_offsets[i + 1]]`` and its rank
    ``ranks[i]``. Ranks strictly increase, and no token is given twice."""

    token_data: np.ndarray     # uint8
    token_offsets: np.ndarray  # int64, one more than there are tokens
    ranks: np.ndarray          # int64

    @classmethod
    def from_vocab(cls, vocab: dict[int, bytes]) -> "RankTable":
        """The table of ``{rank: token}`` (whose tokens are distinct)."""
        items = sorted(vocab.items())
        return cls(*flatten([token for _, token in items]), np.array([rank for rank, _ in items], dtype=np.int64))

    def tokens(self) -> list[bytes]:
        """Each token's bytes, in rank order."""
        data, offsets = self.token_data.tobytes(), self.token_offsets.tolist()
        return [data[start:end] for start, end in zip(offsets, offsets[1:])]
