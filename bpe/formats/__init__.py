"""Reading and writing tokenizer files as plain data, one module per format:
``own`` (``tokenizer.bpe``), ``gpt2`` (``encoder.json`` and ``vocab.bpe``),
``rankfile`` (tiktoken's rank files), ``tekken`` (Mistral's ``tekken.json``);
what they share is in ``common``. Hugging Face's ``tokenizer.json``, which is
a pipeline as much as a vocabulary, is ``bpe.huggingface``.

Readers return a ``TokenizerData`` (vocab, merges, special tokens, pattern)
or, for rank files, a ``bpe.flat.RankTable``; writers take one. These modules
know file layouts, not the ``Tokenizer`` built from them, which checks the
data's consistency itself.
"""
