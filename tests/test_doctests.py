"""The docstring examples of the compiled modules run too (pytest's --doctest-modules,
set in pyproject.toml, runs those of the Python modules)."""
import doctest

import pytest

from bpe import _calls, _decode, _encode, _jsonl, _lists, _memory, _scanner, _train, _types


@pytest.mark.parametrize("module", [_calls, _decode, _encode, _jsonl, _lists, _memory, _scanner, _train, _types],
                         ids=lambda module: module.__name__)
def test_compiled_docstring_examples(module):
    failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0


def test_the_examples_are_found():
    finder = doctest.DocTestFinder()
    assert sum(len(test.examples) for test in finder.find(_train)) >= 4
    assert sum(len(test.examples) for test in finder.find(_scanner)) >= 1
    assert sum(len(test.examples) for test in finder.find(_calls)) >= 3
