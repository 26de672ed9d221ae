"""The labs: executed at build time, failures fail the build, and the lab cache never hides a change.

The labs under ``docs/labs/`` are executed by mkdocs-jupyter at build time with
``allow_errors: false``; their output is cached in ``.cache/labs/<key>/`` (see
``tools/site/labs.py``). One scenario builds a small copy of the repository a few
times: a book of one chapter (whose titled block makes ``src/selfattn/probe.py``) and
two labs, with the real ``mkdocs.yml`` (plugins, hooks, extensions) but its own ``nav``.
It proves that a fresh clone executes every lab, that editing prose executes none, that
saving a lab executes that lab alone, that a change of a module of ``src/`` executes again
exactly the labs that import it (the page shows the new output), and that a raising cell fails
``mkdocs build --strict``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tools.book.tangle import load_config

ROOT = Path(__file__).resolve().parents[2]
CANARY = "lab-build-canary: this cell fails on purpose"
STAND_IN = b"a stand-in: tests/site/test_lab_build.py does not check the wheel\n"


def _replace_nav(config_text: str, pages: list[tuple[str, str]]) -> str:
    """Replace the top-level ``nav:`` block of ``mkdocs.yml`` by ``pages``, leaving every other line as it is.

    The edit is textual so that tags, comments and key order survive untouched.
    """
    lines = config_text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if re.match(r"^nav:\s*$", line))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t-#"):
        end += 1
    nav = ["nav:\n"] + [f"  - {title}: {path}\n" for title, path in pages]
    return "".join(lines[:start] + nav + lines[end:])


def _seed_wheel(root: Path) -> None:
    """Put a stand-in for the package's wheel where the hook looks for the wheel of these sources.

    Every build of the site offers the wheel (``tools/release/package.py``, a ``pip wheel`` of about 3 s),
    which this test does not check: the real site's wheel is checked by ``tests/release/test_release.py`` and
    installed by ``tests/release/test_reader_route.py``. The stand-in is keyed by the hash of the copy's sources
    as the build's own tangling will leave them (the chapter's titled block, written to ``src/``, is
    part of the wheel), so the hook's cache lookup runs as it always does and finds it.
    """
    from tools.release.package import WHEEL_INPUTS, package_version, sources_hash, wheel_name
    from tools.book.tangle import tangle, write

    with tempfile.TemporaryDirectory() as tmp:
        after = Path(tmp)
        shutil.copytree(root / "src", after / "src", ignore=shutil.ignore_patterns("__pycache__"))
        for name in WHEEL_INPUTS:
            shutil.copy2(root / name, after / name)
        write(after, tangle(root))
        key = sources_hash(after)
    target = root / ".cache" / "wheel" / key / wheel_name(package_version(root))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(STAND_IN)


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    _seed_wheel(root)
    env = {
        **os.environ,
        "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}",
        "NO_MKDOCS_2_WARNING": "1",
        "MPLBACKEND": "Agg",
    }
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_replace_nav_keeps_the_rest_of_the_config() -> None:
    text = "site_name: t\nnav:\n  - A: a.md\n  - B:\n      - C: c.md\n\n# comment\nplugins:\n  - search\n"
    out = _replace_nav(text, [("X", "x.md")])
    assert out == "site_name: t\nnav:\n  - X: x.md\nplugins:\n  - search\n"


# ------------------------------------------------------------------------------------------ the lab cache

LAB_HEADER = (
    "# ---\n# jupyter:\n#   jupytext:\n#     text_representation:\n#       extension: .py\n"
    "#       format_name: percent\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n"
    "#     name: python3\n# ---\n\n# %% [markdown]\n# # {title}\n\n# %%\n"
)


def _make_cache_copy(dst: Path) -> Path:
    """A book of one chapter (a titled block makes ``src/selfattn/probe.py``) and two labs.

    ``labs/probe.py`` prints the package's ``VALUE``; ``labs/other.py`` depends on nothing.
    """
    shutil.copytree(ROOT / "tools", dst / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # the hook reads the version and builds the wheel
        shutil.copy2(ROOT / name, dst / name)
    if (ROOT / "overrides").is_dir():
        shutil.copytree(ROOT / "overrides", dst / "overrides")
    docs = dst / "docs"
    for name in ("assets", "javascripts", "stylesheets"):
        if (ROOT / "docs" / name).is_dir():
            shutil.copytree(ROOT / "docs" / name, docs / name)
    (docs / "labs").mkdir(parents=True)
    (dst / "src" / "selfattn").mkdir(parents=True)
    (dst / "src" / "selfattn" / "__init__.py").write_text("", encoding="utf-8")  # a regular package, not tangled
    (dst / "benchmarks" / "results").mkdir(parents=True)
    (dst / "benchmarks" / "results" / "cpu.json").write_text('{"n": 1}\n', encoding="utf-8")
    _write_chapter(dst, '"one"')
    (docs / "labs" / "probe.py").write_text(
        LAB_HEADER.format(title="Probe") + "from selfattn.probe import VALUE\n\nprint(f'probe value: {VALUE}')\n",
        encoding="utf-8",
    )
    (docs / "labs" / "other.py").write_text(
        LAB_HEADER.format(title="Other") + "import os\n\nprint('other lab, threads:', os.environ.get('OMP_NUM_THREADS'))\n",
        encoding="utf-8",
    )
    # The English edition of probe: the same code apart from a comment (other.py has none: i18n falls back to it).
    (docs / "labs" / "probe.en.py").write_text(
        LAB_HEADER.format(title="Probe (English)")
        + "from selfattn.probe import VALUE  # the package's value\n\nprint(f'probe value: {VALUE}')\n",
        encoding="utf-8",
    )
    pages = [("前言", "index.md"), ("Probe", "labs/probe.py"), ("Other", "labs/other.py")]
    config = _replace_nav((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), pages)
    config = re.sub(r"(?m)^(  - print-site:.*)$", r"\1\n      enabled: false  # not what this test is about", config)
    config, hooks = re.subn(r"(?m)^  - tools/site/explorer_hook\.py.*\n", "", config)  # nor the explorer (it needs the real package)
    assert hooks == 1, "the explorer's hook in mkdocs.yml moved: update this test"
    # Nor the search: jieba loads its dictionary in every build (a build of this copy: 5.0-5.6 s with it, 3.7-4.5 without).
    config, searches = re.subn(r"(?m)^  - search:\n(      .*\n)*", "", config)
    assert searches == 1, "the search plugin's entry in mkdocs.yml changed: update this test"
    (dst / "mkdocs.yml").write_text(config, encoding="utf-8")
    parsed = load_config(dst)
    assert parsed["nav"] == [{title: path} for title, path in pages], parsed["nav"]
    jupyter = [p["mkdocs-jupyter"] for p in parsed["plugins"] if isinstance(p, dict) and "mkdocs-jupyter" in p]
    assert jupyter and jupyter[0]["execute"] is True and jupyter[0]["allow_errors"] is False, jupyter
    return dst


def _write_chapter(root: Path, value: str, prose: str = "前言。") -> None:
    fence = "```"
    (root / "docs" / "index.md").write_text(
        f"# 前言\n\n{prose}\n\n{fence}python\n#| file: src/selfattn/probe.py\nVALUE = {value}\n{fence}\n", encoding="utf-8"
    )


def _executed(log: str) -> list[str]:
    """The labs executed in a build, by title (tools/site/hooks.py logs each; a lab whose outputs are
    reused from the other language's run, or come from mkdocs-jupyter's cache, is not executed)."""
    return sorted(re.findall(r"labs: executed '([^']*)'", log))


def _reused(log: str) -> list[str]:
    return sorted(re.findall(r"labs: reused for '([^']*)'", log))


def _ahead(log: str) -> list[str]:
    """The labs whose outputs came from their run ahead (``tools/site/labs.py``, ``execute_ahead``)."""
    return sorted(re.findall(r"labs: executed '([^']*)' \(ahead\)", log))


@pytest.mark.slow
def test_labs_run_again_exactly_when_their_inputs_change(tmp_path: Path) -> None:
    """The lab cache (.cache/labs/<key>/) never hides a change, an edit of prose executes nothing, and a failing
    cell fails the build."""
    root = _make_cache_copy(tmp_path / "repo")
    site = tmp_path / "site"
    probe_page = site / "labs" / "probe" / "index.html"

    def build() -> str:
        run = _build(root, site)
        log = run.stdout + run.stderr
        assert run.returncode == 0, log[-3000:]
        from tools.release.package import package_version, wheel_name

        offered = site / "dist" / wheel_name(package_version(root))
        assert offered.read_bytes() == STAND_IN, "the build made a wheel: _seed_wheel missed the hook's cache key"
        return log

    # A fresh clone (CI) has no cache: every lab is executed.
    # Each is executed once for both editions: the English build reuses the outputs of the same code.
    log = build()
    assert _executed(log) == ["Other", "Probe"]
    # The English probe reuses the Chinese run's outputs. Other has no English file: the English page is built
    # from the same other.py, so it is the Chinese page's cache entry (.cache/labs/<key>/zh/), read from disk.
    assert _reused(log) == ["Probe (English)"]
    assert f"Cache hit: {root / 'docs' / 'labs' / 'other.py'}" in log
    assert "other lab, threads: 1" in (site / "en" / "labs" / "other" / "index.html").read_text(encoding="utf-8")
    # Both ran ahead, in parallel with the build, each kernel with one torch thread.
    assert _ahead(log) == ["Other", "Probe"], log[-3000:]
    assert "other lab, threads: 1" in (site / "labs" / "other" / "index.html").read_text(encoding="utf-8")
    assert "probe value: one" in probe_page.read_text(encoding="utf-8")
    english = (site / "en" / "labs" / "probe" / "index.html").read_text(encoding="utf-8")
    assert "probe value: one" in english and "Probe (English)" in english
    assert list((root / ".cache" / "labs").glob("*/zh/*.json")), "the cache lives under .cache/labs/<key>/<lang>/"
    assert list((root / ".cache" / "labs").glob("*/en/*.json"))

    # Editing a chapter's prose executes no lab (that is what makes `make serve` fast), and saving a lab
    # executes that lab alone: here both at once, in one build.
    _write_chapter(root, '"one"', prose="前言，改了一句。")
    lab = root / "docs" / "labs" / "probe.py"
    lab.write_text(lab.read_text(encoding="utf-8").replace("probe value", "probe VALUE"), encoding="utf-8")
    log = build()
    assert _executed(log) == ["Probe"]  # the English probe keeps its cached page: its text did not change
    assert _ahead(log) == ["Probe"]
    assert "probe VALUE: one" in probe_page.read_text(encoding="utf-8")

    # A change of a module (a titled block, re-tangled into src/selfattn/probe.py) executes again the labs that
    # import it, and no other: no stale output, and no needless run.
    _write_chapter(root, '"two"')
    # The English probe's code now differs from the Chinese one (it still prints "probe value"): it runs on its own.
    log = build()
    assert _executed(log) == ["Probe", "Probe (English)"]
    assert _ahead(log) == ["Probe", "Probe (English)"]
    assert _reused(log) == [], "the other lab imports nothing of the package: its page comes from the cache"
    assert "probe VALUE: two" in probe_page.read_text(encoding="utf-8")
    assert "other lab, threads: 1" in (site / "labs" / "other" / "index.html").read_text(encoding="utf-8")

    # A cell that raises fails the strict build, names its error, and leaves no page (and no cache entry).
    lab.write_text(lab.read_text(encoding="utf-8") + f'\n\n# %%\nraise RuntimeError("{CANARY}")\n', encoding="utf-8")
    cached = sorted((root / ".cache" / "labs").glob("*/*/*.json"))
    run = _build(root, site)
    log = run.stdout + run.stderr
    assert run.returncode != 0, f"the build should fail on the raising cell, but it exited 0:\n{log[-3000:]}"
    assert CANARY in log, f"the build log should name the failing cell's error:\n{log[-3000:]}"
    assert "labs: 'Probe' failed ahead (CellExecutionError); executing it in place" in log, log[-3000:]
    assert not probe_page.exists(), "no page for the failed lab"
    assert sorted((root / ".cache" / "labs").glob("*/*/*.json")) == cached, "a failed run is not cached"


def _notebook(*code: str) -> object:
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    return new_notebook(cells=[new_markdown_cell("# Lab"), *(new_code_cell(c) for c in code)])


def test_a_labs_key_covers_the_modules_it_imports_the_data_and_the_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.site import hashing, labs

    module = tmp_path / "src" / "selfattn" / "m.py"
    other = tmp_path / "src" / "selfattn" / "other.py"
    (tmp_path / "src" / "selfattn").mkdir(parents=True)
    (tmp_path / "src" / "selfattn" / "__init__.py").write_text("", encoding="utf-8")
    data = [tmp_path / name for name in ("benchmarks/results/cpu.json", "docs/labs/data/book.en.txt", "models/charlm.pt")]
    for path in [module, other, *data]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("X = 1\n", encoding="utf-8")
    nb = _notebook("%matplotlib inline", "from selfattn.m import X\nprint(X)")
    plain = _notebook("print(1)")
    keys = [labs.lab_key(nb, tmp_path)]
    assert labs.lab_key(nb, tmp_path) == keys[0], "the key is reproducible"
    plain_key = labs.lab_key(plain, tmp_path)
    module.write_text("X = 2\n", encoding="utf-8")
    keys.append(labs.lab_key(nb, tmp_path))
    assert labs.lab_key(plain, tmp_path) == plain_key, "a lab that does not import the module keeps its key"
    other.write_text("Y = 2\n", encoding="utf-8")
    assert labs.lab_key(nb, tmp_path) == keys[-1], "nor does a module the lab does not import move it"
    (tmp_path / "src" / "selfattn" / "__init__.py").write_text("Z = 1\n", encoding="utf-8")
    keys.append(labs.lab_key(nb, tmp_path))  # every import of selfattn runs its __init__.py
    for path in data:  # the benchmark results, a corpus line appended, a retrained checkpoint
        path.write_text("X = 1\nmore\n", encoding="utf-8")
        keys.append(labs.lab_key(nb, tmp_path))
    real = hashing.importlib.metadata.version
    monkeypatch.setattr(hashing.importlib.metadata, "version", lambda name: "9.9" if name == "torch" else real(name))
    keys.append(labs.lab_key(nb, tmp_path))
    assert len(set(keys)) == len(keys), keys


LABS = sorted((ROOT / "docs" / "labs").glob("*.py"))


def test_every_file_a_lab_reads_is_in_its_cache_key(tmp_path: Path) -> None:
    """Found from the labs themselves: each file a lab names (the corpus, a checkpoint, the benchmark
    results), copied with the package into a bare repository, moves the key when its bytes change."""
    from tools.site import labs

    read = {path.name: labs.files_read_by_lab(path, ROOT) for path in LABS}
    assert read["capstone.en.py"] == ["docs/labs/data/book.en.txt", "models/charlm.en.pt"], read
    assert read["benchmarks.py"] == ["benchmarks/results/cpu.json"], read
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    readers = {name: [path for path in LABS if name in read[path.name]] for names in read.values() for name in names}
    for name, paths in sorted(readers.items()):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
        before = [labs.lab_key(labs.lab_notebook(path), tmp_path) for path in paths]
        with (tmp_path / name).open("ab") as f:
            f.write(b"\n")
        after = [labs.lab_key(labs.lab_notebook(path), tmp_path) for path in paths]
        assert all(a != b for a, b in zip(after, before, strict=True)), f"{name}: read by a lab, not in its cache key"


def test_code_key_ignores_comments_and_assert_messages_only() -> None:
    """What decides whether the English lab may reuse the Chinese lab's outputs."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    from tools.site.labs import code_key

    def key(*code: str, prose: str = "# 标题") -> str:
        return code_key(new_notebook(cells=[new_markdown_cell(prose), *(new_code_cell(c) for c in code)]))

    zh = key("%matplotlib inline\nx = 1  # 注释", "assert x == 1, '应为 1'\nprint(f'x = {x}')")
    assert zh == key("%matplotlib inline\nx = 1  # a comment", "assert x == 1, 'must be 1'\nprint(f'x = {x}')", prose="# Title")
    assert zh != key("%matplotlib inline\nx = 1", "assert x == 1\nprint(f'x is {x}')")  # printed text differs
    assert zh != key("%matplotlib inline\nx = 2", "assert x == 1\nprint(f'x = {x}')")
    assert zh != key("x = 1", "assert x == 1\nprint(f'x = {x}')")  # the magic is part of the code


@pytest.mark.parametrize("dirty_rebuild_keeps", [False, True])
def test_a_dirty_rebuild_keeps_the_lab_cache(tmp_path: Path, dirty_rebuild_keeps: bool) -> None:
    """mkdocs-jupyter deletes, after a build, the cache entries the build did not look up. A rebuild of one
    saved page under `serve --dirty` looks up no lab: without ``keep_cache_when_dirty`` the whole lab cache
    goes (the control case, so the test shows the upstream behaviour it guards against)."""
    from mkdocs_jupyter.plugin import Plugin

    from tools.site import labs

    jupyter = Plugin()
    errors, warnings = jupyter.load_config({"execute": True, "cache": True, "cache_dir": str(tmp_path)})
    assert not errors, errors
    entries = [tmp_path / f"{name}.json" for name in ("a" * 64, "b" * 64)]
    for entry in entries:
        entry.write_text("{}", encoding="utf-8")

    class Config:
        plugins = {"mkdocs-jupyter": jupyter}

    jupyter.on_pre_build(Config())  # a rebuild starts; no lab page is rendered in it
    if dirty_rebuild_keeps:
        labs.keep_cache_when_dirty(Config())
    jupyter.on_post_build(Config())
    assert [entry.exists() for entry in entries] == [dirty_rebuild_keeps] * 2
