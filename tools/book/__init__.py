"""Tools that read the book's pages (``docs/``).

* ``tangle``       the tangler: the chapters' titled blocks become ``src/selfattn/``;
* ``parity``       the two editions run the same code;
* ``linkcheck``    every link of the built site resolves;
* ``prose_stats``  the sentence shape of the English prose (colons, semicolons, parentheses, bold).
"""
