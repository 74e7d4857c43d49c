"""Hugging Face ``tokenizer.json`` files of byte-level BPE models, read and run as
``tokenizers`` runs them; and written.

``tokenizers`` encodes a text in five steps, and so does bpe for these files:

1. **Added tokens**, in two passes: those with ``normalized: false`` are found
   in the raw text, then those with ``normalized: true`` in each normalized
   stretch between them. Each pass takes the leftmost match, the longest at a
   position, and never looks inside a match again. ``single_word`` drops a
   match with a word character beside it; ``lstrip``/``rstrip`` let it absorb
   the white space beside it. Special or not, every added token is split out.
2. **The normalizer** (NFC, NFKC, NFD, NFKD, Lowercase, Replace, Prepend,
   Strip, Sequence) of each stretch between added tokens.
3. **The pre-tokenizer** (Split with any behaviour, ByteLevel, Digits,
   Punctuation, Whitespace, WhitespaceSplit, Sequence) of each stretch.
4. **The model**: byte-level BPE by Hugging Face's rule (``bpe.vocabulary``),
   in bpe's kernel.
5. **The post-processor**, only when asked (``add_special_tokens``):
   TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel (adds
   nothing), Sequence.

Where a file's steps are one pattern and plain added tokens (no normalizer,
or text it leaves unchanged), the kernel does steps 1 to 4 alone; otherwise
Python runs steps 1 to 3 and hands the kernel the pre-tokens
(``Pipeline.simple``). What ``tokenizers`` does that bpe does not reproduce
is refused when the file is read, naming the field and why.

``pipeline`` runs steps 1 to 3 (``Pipeline``); ``tokenizer_json`` reads a file,
refusing what it cannot run, and writes one.

Unicode tables are measured (docs/formats.md, "What is not exact"):
``tokenizers`` normalizes with Unicode 9 tables (bpe leaves the code points
those tables lack as they are, as ``tokenizers`` does), lowercases with
Unicode 17, and matches patterns with Oniguruma's Unicode 16 classes, as bpe
does (``bpe.unicode``).
"""
