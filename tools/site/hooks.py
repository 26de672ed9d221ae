"""The build of the book, event by event: the mkdocs hooks (``hooks:`` in ``mkdocs.yml``).

This file only wires mkdocs' events to the modules of ``tools/site/``, one per concern (their
docstrings say how each works). Read top to bottom, it is the table of contents of a build.
Two editions: mkdocs-static-i18n builds the Chinese site into ``site/``, then the English one
into ``site/en/`` from inside the first build's ``on_post_build``, so every event below runs once
per language. ``mkdocs serve --dirty`` (``make serve``) rebuilds only the saved page.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # so that `tools` imports under `mkdocs`
from tools.site import (
    figures,
    labpages,
    labs,
    languages,
    mode,
    notebooks,
    printpage,
    search,
    stamp,
    switcher,
    tangling,
    templates,
    watching,
    wheel,
)


# Triton chooses at its import between compiled and interpreted kernels, and a figure may import it early through
# torch (torch.utils.flop_counter in chapter 1). Without a GPU only the interpreter runs a kernel (8.5's figures).
if not glob.glob("/dev/nvidia[0-9]*"):
    os.environ.setdefault("TRITON_INTERPRET", "1")


def root_of(config: Any) -> Path:
    return Path(config.config_file_path).parent


def source_of(page: Any, config: Any) -> str:
    """The file a page is built from, as messages name it: ``docs/03-qkv-formula.en.md``."""
    path = Path(page.file.abs_src_path or page.file.src_uri)
    return path.relative_to(root_of(config)).as_posix() if path.is_relative_to(root_of(config)) else path.as_posix()


def on_startup(command: str, dirty: bool) -> None:
    mode.start(command, dirty)  # build, serve, or serve --dirty


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    return watching.poll_faster(server)  # a save is seen within 0.1 s, not 0.5 s


@event_priority(100)  # before the search plugin reads its options (and before i18n's own on_config)
def on_config(config: Any) -> Any:
    lang = languages.configure(config)  # the theme speaks the language being built
    search.configure(config, lang)  # its search settings: jieba for Chinese, stop words for English
    wheel.set_version(config)  # the package's version, for {{ selfattn_version }} and the footer
    printpage.configure(config, lang, mode.dirty())  # the print page's titles; off under serve --dirty
    return config


def on_pre_build(config: Any) -> None:
    root = root_of(config)
    if not languages.nested():  # the English build runs inside the Chinese one, which has just tangled
        tangling.retangle(root)  # src/ from the chapters (only the files that changed)
        if not mode.serving():
            stamp.begin(root)  # what this build is built from, for its stamp in site/
    if not hasattr(config, "plugins"):  # tests/book/test_tangle.py calls this with a bare config
        return
    lang = languages.begin(config)  # this language's build starts (i18n nests the English one)
    search.remember(config, lang)  # keep its search settings, for its own index
    wheel.footer(config)  # the version in the footer
    labs.use_cache(config, root, lang)  # the labs' cache: each lab keyed by the modules it imports, the data, the tools
    labs.execute_each_lab_once()  # an English lab reuses the Chinese lab's outputs
    labs.execute_ahead(config, root)  # the labs this build will execute, both editions, two kernels at a time
    figures.begin(root, mode.serving())  # the figures' cache keys: the modules each imports, the data, the tools
    figures.check(root, lang)  # the figures' numbers and the references to them (errors fail --strict)


@event_priority(-200)  # after mkdocs-static-i18n (-100)
def on_files(files: Any, config: Any) -> Any:
    root = root_of(config)
    files = labs.rewrap(files, config, languages.language(config))  # the labs as notebook pages again
    wheel.offer(files, config, root, stale_ok=mode.serving())  # the wheel at dist/
    if mode.dirty():
        labs.rebuild_pages_showing_src(files, root)  # src/ changed: rebuild the labs and the API page
        labs.keep_cache_when_dirty(config)  # a rebuild of one page does not empty the labs' cache
    return files


@event_priority(100)  # before mkdocs-jupyter's, which looks the lab up in its cache
def on_pre_page(page: Any, config: Any, files: Any) -> None:
    labs.point_cache(page, config)  # the cache folder of this lab: its key


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    lang = languages.language(config)
    markdown = figures.place(markdown, lang, root_of(config), source_of(page, config))  # figure blocks -> figures
    markdown = wheel.substitute(markdown, config)  # {{ selfattn_version }}
    return tangling.titleize(markdown)  # `#| file:` markers -> block titles


@event_priority(50)  # before print-site keeps each page's HTML for the print page
def on_page_content(html: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    html = labpages.fix(html, page, files, languages.language(config))  # a lab: heading ids, .md links, figures
    return figures.inline(html, source_of(page, config))  # the figures' SVG in place of their placeholders


def on_page_context(context: Any, page: Any, config: Any, **kwargs: Any) -> Any:
    lang = languages.language(config)
    notebooks.link(page, lang)  # the download link of a chapter's or lab's notebook
    return switcher.point(context, page, config, lang)  # the switcher: the same page in the other edition


def on_post_template(output: str, template_name: str, config: Any) -> str:
    return templates.keep_rendering(output, template_name, languages.current(config))  # 404.html, sitemap.xml


@event_priority(-200)  # after mkdocs-static-i18n (-100), which builds the other languages in its on_post_build
def on_post_build(config: Any) -> None:
    root = root_of(config)
    lang = languages.end(config)
    notebooks.write(config, lang, mode.dirty())  # one notebook per chapter and per lab
    if not languages.outermost():
        return
    # The first build ends after all the others:
    search.split_index(config)  # one search index per language
    search.forget_duplicates(config)  # serve: the index material carries to the next rebuild, once each
    templates.write_static_pages(config)  # each language's 404.html and sitemap.xml
    printpage.finish(config)  # the print pages: links to figures, the labs' style sheets once
    labs.prune(root, mode.partial())  # drop the labs' cache folders no lab used (but the newest few)
    figures.prune(root, mode.partial())  # drop the cached figures no page used
    stamp.finish(config)  # site/.build-inputs.json: what the site was built from (tests/conftest.py reads it)


def on_build_error(error: Exception) -> None:
    labs.cancel_ahead()  # the labs queued ahead: a failed build does not wait for them
    languages.reset()  # no build is under way any more (serve builds again after the next save)
