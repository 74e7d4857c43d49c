"""Training: count pre-tokens (in parallel), then run the Cython merge loop."""
from __future__ import annotations

import warnings
from typing import Iterable, Optional, Sequence

from bpe._memory import release_free_memory
from bpe._train import MergeState
from bpe.corpus.counting import PretokenCounts, count_pretokens, count_pretokens_from_iterator
from bpe.progress import progress_bar
from bpe.specials import check_special_tokens
from bpe.tokenizer import Tokenizer

N_BYTE_TOKENS = 256
#: Token ids are int32 inside the kernels.
MAX_VOCAB_SIZE = 2**31 - 1
MERGES_PER_PROGRESS_STEP = 500


def _merges_wanted(vocab_size: int, special_tokens: Sequence[str]) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {vocab_size!r}")
    smallest = N_BYTE_TOKENS + len(special_tokens)
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size={vocab_size} is more than token ids can hold "
                         f"(at most {MAX_VOCAB_SIZE})")
    if vocab_size < smallest:
        raise ValueError(f"vocab_size={vocab_size} is too small: {N_BYTE_TOKENS} byte tokens + "
                         f"{len(special_tokens)} special tokens need at least {smallest}")
    return vocab_size - smallest


def _check_min_frequency(min_frequency: int) -> int:
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
        raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
    return min_frequency


def train_from_counts(counts: PretokenCounts, vocab_size: int, special_tokens: Sequence[str] = (),
                      *, min_frequency: int = 1, progress: bool = False) -> Tokenizer:
    """Learn merges from pre-token counts until the vocab has ``vocab_size`` tokens.

    Ids: 0..255 are the bytes, then the special tokens in the order given, then
    one id per merge. Stops early (with a warning) when no pair occurs at least
    ``min_frequency`` times.
    """
    special_tokens = check_special_tokens(special_tokens)
    n_wanted = _merges_wanted(vocab_size, special_tokens)
    min_frequency = _check_min_frequency(min_frequency)
    if len(counts) >= 2**31 - 1:
        raise ValueError(f"{len(counts)} distinct pre-tokens: more than the kernel's int32 word ids")
    # Each merge shortens some pre-token by at least one token, so there can be no
    # more merges than bytes: room for more would only be memory never used.
    # What counting freed (its chunks and interners) goes back to the OS first, so
    # that the merge loop's memory does not stack on it at the peak.
    release_free_memory()
    state = MergeState(counts.data, counts.offsets, counts.counts, min(n_wanted, len(counts.data)))
    bar = progress_bar(progress, n_wanted, "merging", unit="merge")
    with bar:
        step = MERGES_PER_PROGRESS_STEP if progress else max(n_wanted, 1)
        while not state.exhausted and state.n_merges < n_wanted:
            bar.update(state.run(min(step, n_wanted - state.n_merges), min_frequency))

    token_bytes = [bytes([byte]) for byte in range(N_BYTE_TOKENS)]
    merges = []
    for left, right in state.merges().tolist():
        merges.append((token_bytes[left], token_bytes[right]))
        token_bytes.append(token_bytes[left] + token_bytes[right])
    if len(merges) < n_wanted:
        reason = ("no pair is left to merge" if min_frequency == 1
                  else f"no pair occurs {min_frequency} times or more")
        warnings.warn(f"learned {len(merges)} merges of the {n_wanted} that vocab_size={vocab_size} "
                      f"asks for ({reason}); the vocab has "
                      f"{N_BYTE_TOKENS + len(special_tokens) + len(merges)} tokens", stacklevel=2)

    vocab = {byte: token_bytes[byte] for byte in range(N_BYTE_TOKENS)}
    special_ids = {}
    for token in special_tokens:
        special_ids[token] = len(vocab)
        vocab[len(vocab)] = token.encode("utf-8")
    for left, right in merges:
        vocab[len(vocab)] = left + right
    return Tokenizer(vocab, merges, special_ids, pattern=counts.pattern)


def train(input, vocab_size: int, special_tokens: Sequence[str] = (), *,
          pattern: Optional[str] = "gpt2", min_frequency: int = 1,
          num_workers: Optional[int] = None, errors: str = "strict",
          progress: bool = False, chunk_size: Optional[int] = None, text_field: str = "text",
          recursive: bool = False, glob: Optional[str] = None) -> Tokenizer:
    """Train a byte-level BPE tokenizer on corpus files.

    Parameters
    ----------
    input : path, list of paths, or directory
        Text (UTF-8), JSON Lines and Parquet files, compressed or not; a
        directory's such files (its subdirectories' too with ``recursive``;
        those matching ``glob`` when given). Each record of JSON Lines or
        Parquet (its ``text_field``, dotted for a nested field) is a text of
        its own: training on it equals training on a text file of the records
        joined by a special token.
    vocab_size : int
        256 byte tokens + the special tokens + one token per merge.
    special_tokens : sequence of str
        Split out before pre-tokenization, never merged; ids 256, 257, ...
    pattern : "gpt2" | "cl100k" | "o200k" | regex | None
        The pre-tokenizer; None keeps each special-token-delimited segment whole.
    min_frequency : int
        Stop when the best pair occurs fewer times than this.
    num_workers : int, optional
        Workers for pre-tokenization (threads; processes for a custom pattern);
        default all cores.
    errors : "strict" | "replace"
        Undecodable bytes raise an error naming the file and offset, or read as U+FFFD.
    progress : bool
        tqdm progress bars for pre-tokenization and merges.
    chunk_size : int, optional
        Bytes per pre-tokenization task; only changes how work is shared.
    text_field, recursive, glob
        As for ``input`` above.

    >>> import bpe, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("low low low lower lowest")
    >>> bpe.train(path, 259).merges
    [(b'o', b'w'), (b'l', b'ow'), (b' ', b'low')]
    """
    special_tokens = check_special_tokens(special_tokens)
    _merges_wanted(vocab_size, special_tokens)
    _check_min_frequency(min_frequency)
    counts = count_pretokens(input, special_tokens, pattern=pattern, num_workers=num_workers,
                             errors=errors, progress=progress, chunk_size=chunk_size, text_field=text_field,
                             recursive=recursive, glob=glob)
    return train_from_counts(counts, vocab_size, special_tokens, min_frequency=min_frequency,
                             progress=progress)


def train_from_iterator(texts: Iterable[str], vocab_size: int, special_tokens: Sequence[str] = (),
                        *, pattern: Optional[str] = "gpt2", min_frequency: int = 1,
                        num_workers: Optional[int] = None, errors: str = "strict",
                        progress: bool = False, text_field: str = "text") -> Tokenizer:
    """Train on an iterable of texts (each a separate text: no pre-token spans two),
    or on a Hugging Face ``datasets.Dataset`` / ``IterableDataset`` (its
    ``text_field`` column).

    Options as in ``train``; ``errors`` applies to lone surrogates in the texts.
    """
    special_tokens = check_special_tokens(special_tokens)
    _merges_wanted(vocab_size, special_tokens)
    _check_min_frequency(min_frequency)
    counts = count_pretokens_from_iterator(texts, special_tokens, pattern=pattern,
                                           num_workers=num_workers, errors=errors,
                                           progress=progress, text_field=text_field)
    return train_from_counts(counts, vocab_size, special_tokens, min_frequency=min_frequency,
                             progress=progress)
