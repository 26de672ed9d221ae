"""Helpers the tests use (they test nothing themselves; ``tests/`` tests them too).

* ``fake_cuda``   a fake CUDA device on a CPU-only machine, to catch a tensor left on the CPU;
* ``codeblocks``  the programs pytest-codeblocks runs from a page, with the page's line numbers;
* ``browser``     the built site in Chromium: a local server under ``/selfattn/``, a browser, one tab;
* ``check_page``  ``make check PAGE=...``: the tests of one page and its strict build, side by side.
"""
