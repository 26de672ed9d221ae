"""The site build of the book, one module per concern; ``hooks.py`` wires them to mkdocs.

The two hook files that ``mkdocs.yml`` registers (``hooks:``):

* ``hooks``      the build, event by event: calls the modules below;
* ``explorer_hook``  the attention explorer's weights and presets, added to each edition's build.

The modules they call:

* ``mode``       which command runs: ``mkdocs build``, ``serve`` or ``serve --dirty``;
* ``languages``  the two editions: which one is being built, where its pages live;
* ``tangling``   ``src/`` re-tangled from the chapters, and each titled block's file shown as its title;
* ``labs``       the labs: their execution cache (each lab keyed by the modules it imports), one
                 execution for both editions, run ahead two at a time, their pages;
* ``figures``    the figure blocks, executed into inline SVG figures under a content-hash cache;
* ``templates``  ``404.html`` and ``sitemap.xml``, per language;
* ``printpage``  the print page (the whole book on one page), per language;
* ``notebooks``  one Jupyter notebook per chapter and per lab, and the download link of each page;
* ``search``     one search index per language (and, under serve, one entry per location);
* ``switcher``   the language switcher: the same page in the other edition;
* ``wheel``      the package's version in the pages and the footer, and its wheel under ``dist/``;
* ``watching``   how soon ``mkdocs serve`` sees a save (its file watcher's interval);
* ``stamp``      what a built site was built from (``site/.build-inputs.json``), so that no test reads a stale one.

And one that runs a build of its own:

* ``page_build`` a strict build of one page and the pages it links to (``make check PAGE=...``).

Each module imports mkdocs and the notebook tools only inside the functions that need them,
so that the tools (``tools/book/parity.py``) and the tests can use them cheaply.
"""
