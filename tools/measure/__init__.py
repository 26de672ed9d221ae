"""Measurements that need a running system, never asserted by a test.

* ``serve_timing``  the edit loop of ``mkdocs serve``: seconds from a save to the reload;
* ``gpu_check``     ``make gpu-check``: everything that needs a real GPU, in one run, one JSON;
* ``figure_text``   the figures' text in Chromium: its size at 1280 and 390 px, overlaps, contrast
                    (``tests/site/test_figure_text.py`` holds the figures to its limits);
* ``phone``         the site at 390 and 1280 px: figure text, formulas and code that scroll, axe, bytes, load time
                    (issue 39's table; ``tests/site/test_browser.py`` asserts on its ``SCROLLERS``).
"""
