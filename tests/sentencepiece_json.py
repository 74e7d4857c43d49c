"""SentencePiece BPE models written as ``transformers``' converter writes them
(``tokenizer.json``), for the tests and benchmarks of those files: every split
of a piece into two pieces is a merge, ordered by the piece's score, and the
text is made as converted files make it, in one of three forms:

* ``prepend_replace``: a Prepend and a Replace normalizer (Llama 2's files);
* ``metaspace_first``: a Metaspace pre-tokenizer that prepends to the first
  stretch only, without splitting (newer conversions);
* ``metaspace_split``: one that prepends always and splits at each ``▁`` (older ones).
"""
import json

SPACE = "\u2581"
FORMS = ["prepend_replace", "metaspace_first", "metaspace_split"]


def to_tokenizer_json(data: bytes, form: str) -> str:
    """A SentencePiece BPE model (its bytes) as ``transformers``' converter writes it, in ``form``."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    proto = model_pb2.ModelProto()
    proto.ParseFromString(data)
    pieces = [(p.piece, p.score, p.type) for p in proto.pieces]
    vocab = {text: index for index, (text, _, _) in enumerate(pieces)}
    merges = []
    for index in sorted(range(len(pieces)), key=lambda i: -pieces[i][1]):
        text = pieces[index][0]
        local = [(text[:k], text[k:]) for k in range(1, len(text)) if text[:k] in vocab and text[k:] in vocab]
        merges.extend(sorted(local, key=lambda pair: (vocab[pair[0]], vocab[pair[1]])))
    added = [{"id": index, "content": text, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": kind in (2, 3)}
             for index, (text, _, kind) in enumerate(pieces) if kind in (2, 3, 4)]
    strip = {"type": "Strip", "content": " ", "start": 1, "stop": 0}
    replace_back = {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}
    if form == "prepend_replace":
        normalizer = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE}, {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
        pre_tokenizer = None
        decoders = [replace_back, {"type": "ByteFallback"}, {"type": "Fuse"}, strip]
    elif form == "metaspace_first":
        normalizer = None
        pre_tokenizer = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": False}
        decoders = [replace_back, {"type": "ByteFallback"}, {"type": "Fuse"}, strip]
    else:
        normalizer = None
        pre_tokenizer = {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": True}
        decoders = [{"type": "ByteFallback"}, {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always",
                                                "split": True}, {"type": "Fuse"}]
    bos = pieces[proto.trainer_spec.bos_id][0]
    post_processor = {"type": "TemplateProcessing",
                      "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                      "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                               {"Sequence": {"id": "B", "type_id": 1}}],
                      "special_tokens": {bos: {"id": bos, "ids": [proto.trainer_spec.bos_id], "tokens": [bos]}}}
    document = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {"type": "BPE", "dropout": None, "unk_token": pieces[proto.trainer_spec.unk_id][0],
                  "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "ignore_merges": False, "vocab": vocab, "merges": [list(m) for m in merges]},
    }
    return json.dumps(document, ensure_ascii=False)


