"""Tools that read the book's pages (``docs/``). Each measure prints its report with ``python -m``;
its test in ``tests/book/`` holds the book to the limits.

* ``tangle``        the tangler: the chapters' titled blocks become ``src/selfattn/``;
* ``parity``        the two editions run the same code;
* ``linkcheck``     every link of the built site resolves;
* ``anchors``       every link between the pages, and to their anchors, resolves in the sources (no build);
* ``reading_path``  what a reader reads of each chapter page: longest block, bytes left, ``tests/`` named;
* ``english``       CJK characters where an English reader reads code, by kind;
* ``terms``         one term per concept in the English prose: the variants found; the house rules
                    still counted (heading case, exercises, numbers, ...);
* ``terms_zh``      its Chinese twin: terms and punctuation of the Chinese prose;
* ``prose_stats``   the sentence shape of the English prose: sentence length, short sentences, runs
                    of short sentences; colons, semicolons, parentheses, bold;
* ``tics``          calques and tics of the English prose ("one by one", "This is checked", ...);
* ``prose_zh``      the Chinese prose: long sentences, colon chains, remarks about the checks,
                    translationese, punctuation;
* ``words``         words of prose per figure (chapters 1-5) and the preface's fast route's reading time.
"""
