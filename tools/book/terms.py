"""One term per concept in the English edition: the variants of each chosen term, found in the prose.

``TERMS`` maps each concept's chosen term to the variants the English edition must not use for
it. :func:`all_hits` scans the prose of every English page (``docs/**/*.en.md``), the Markdown cells of
every English lab (``docs/labs/*.en.py``), the figures' captions and alt texts (``#| caption:``,
``#| alt:``) and the README, and gives one ``file:line: variant -> chosen term`` per hit
(``tests/book/test_terms.py`` fails on any). The same test fails on a British spelling in the
code of the English pages and labs (docstrings and comments, :func:`spelling_hits`).

Code is not prose: fenced blocks (except the caption and alt lines of a figure block), inline
code, math, HTML tags, link targets, URLs and HTML comments are taken out before the scan, so an
identifier such as ``fp16`` in code is not a hit. So is Chinese in fullwidth parentheses (the
glossary's 中文 column writes ``前馈网络（FFN）``, the Chinese edition's term).

``REPORTS`` are the house rules that need a sentence rewritten rather than a word replaced: the
case of H1s and nav titles, the exercise format, section numbers, number formats, half-math, code
identifiers outside backticks (not in captions and alt texts, which are plain text) and glossary
terms that no chapter uses. :func:`all_reports` lists each place; ``tests/book/test_terms.py`` fails
on any, as it does on a variant.

``python -m tools.book.terms`` prints the hits without failing, then a count per rule;
``--reports`` also lists each place a report rule finds; ``--root DIR`` scans another checkout.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from pathlib import Path

from tools.book.prose_stats import ATTRS, CAPTION, CELL, HTML_COMMENT, INLINE_CODE, INLINE_MATH, TAG, URL
from tools.book.tangle import parse_fences

ROOT = Path(__file__).resolve().parents[2]

# British spellings and their American forms; also found in the code of the English pages (docstrings,
# comments), where :func:`spelling_hits` looks. ``aria-labelledby`` is an HTML attribute, not a spelling.
BRITISH = [
    r"\bneighbour", r"\bcolour", r"\bbehaviour", r"\bfavour", r"\bhonour", r"\blabour", r"\bcentre",
    r"\bfibre", r"\banalys(?:e|ed|ing)\b", r"\b(?:normal|initial|optim|organ|recogn|real|summar|minim|maxim|"
    r"visual|parameter|regular|token|serial|standard|emphas|special|general|vector|character)is(?:e|ed|es|ing|ation)",
    r"\bmodell(?:ing|ed)\b", r"\blabell(?:ed|ing)\b(?!by)", r"\btravell", r"\bcancell(?:ed|ing)\b", r"\bsignall",
    r"\bgrey\b", r"\blicence\b", r"\bartefact", r"\bcatalogue\b", r"\bprogramme\b", r"\bwhilst\b",
    r"\blearnt\b", r"\bspelt\b", r"\bjudgement\b",
]

# chosen term: the variants that name the same thing (regular expressions)
TERMS: dict[str, list[str]] = {
    "fully masked row": [
        r"\bempty rows?\b", r"\b(?:whole|entire) rows? (?:\w+ ){0,2}masked\b",
        r"\bfully masked quer(?:y|ies)\b", r"\b(?:fully|all)-masked\b", r"\brows? all masked\b",
        r"\brows? (?:\w+ ){0,3}(?:is|are) empty\b",
    ],
    "bit for bit": [
        r"\bbitwise\b(?! (?:not|NOT|negation|inversion|complement|and|or))",
        r"\bbit-(?:for-bit|exact|identical)\b",
    ],
    "LayerNorm": [r"(?<![-\w])LN\b", r"\b[Ll]ayer[ -][Nn]orm\w*", r"\b[Ll]ayernorm\b"],
    "Pre-LN": [r"\bpre-LN\b", r"\bpost-LN\b", r"\b[Pp](?:re|ost)-?norm(?:ali[sz]ation)?\b"],
    "feed-forward network": [r"\bFFNs?\b", r"\bMLPs?\b", r"\b[Ff]eed ?forward\b"],
    "boolean mask": [r"\b[Bb]ool(?:-| )masks?\b", r"\b[Bb]ool\b(?![ -]masks?\b)"],
    "explicit implementation": [r"\bexplicit (?:code )?(?:path|version|variant)s?\b"],
    "weighted sum": [r"\bweighted[ -](?:average|mean)s?\b", r"\bweight-averaged\b"],
    "float16": [r"\b[Ff][Pp]16\b"],
    "heatmap": [r"\b[Hh]eat[ -]maps?\b"],
    "example sentence": [r"\bworked example\b"],
    # The errata page is called by its title; its entries are "claim N".
    "Common Claims, Corrected": [r"\b[Ee]rrat(?:a|um)\b", r"\bCommon claims, corrected\b"],
    "claim N": [r"\b[Cc]ommon claim (?=\d)"],
    "collapsed": [r"\bfolded\b(?! into)", r"\bfold(?:s|ing)? away\b"],
    "top-left, bottom-right": [r"\btop left\b", r"\bbottom right\b", r"\btop right\b", r"\bbottom left\b"],
    # torch==X.Y belongs to code and commands; prose names the project.
    "PyTorch X.Y": [r"(?<![\w.=/-])[Tt]orch \d+\.\d+", r"\btorch==\d"],
    "pytorch/pytorch#N": [r"(?<![\w/])pytorch#\d+"],
    "score matrix": [r"\bscores matri(?:x|ces)\b"],
    "plot module": [r"\b(?:drawing|plotting) modules?\b"],
    "elementwise": [r"\belement[ -](?:for|by)[ -]element\b", r"\belement-wise\b"],
    "nonnegative": [r"\bnon-negative\b"],
    "American spelling": BRITISH,
    "A and B (A et al.)": [r"\b[A-Z][a-z]+ & [A-Z][a-z]+\b"],
    "Exercise N, Misconception N": [r"\b(?:exercise|misconception) (?=\d)"],
    'straight quotes ("...")': [r"[“”‘’]"],
    # The chapters compare the loss with the unigram baseline; the glossary pairs their term.
    "unigram baseline": [r"\bunigram entropy\b"],
}

PATTERNS = [(re.compile(p), term) for term, variants in TERMS.items() for p in variants]
SPELLING = [re.compile(p) for p in BRITISH]

# What prose is not, line by line (the patterns tools/book/prose_stats.py measures the prose with)
REMOVE = [
    HTML_COMMENT,
    INLINE_CODE,
    re.compile(r"\$\$.*?\$\$"),  # display math on one line
    INLINE_MATH,
    re.compile(r"\]\([^)]*\)"),  # link targets (the link's text stays)
    URL,
    ATTRS,  # attribute lists {#id}
    TAG,  # HTML tags with their attributes (the explorer's strings for its script)
    re.compile(r"（[^）]*）"),  # Chinese in fullwidth parentheses
]


def clean(line: str, remove: list[re.Pattern[str]] | None = None) -> str:
    """A line with what is not prose (``remove``, by default ``REMOVE``) blanked out."""
    for pattern in REMOVE if remove is None else remove:
        line = pattern.sub(" ", line)
    return line


def markdown_lines(text: str, remove: list[re.Pattern[str]] | None = None) -> list[tuple[int, str]]:
    """(1-based line number, prose) for every line of a Markdown page outside fences, and for the
    caption and alt lines of its figure blocks (``remove``: see :func:`clean`)."""
    lines = text.splitlines()
    out: dict[int, str] = {}
    code: set[int] = set()
    for fence in parse_fences(text, ""):
        span = range(fence.start, min(fence.start + len(fence.body) + 2, len(lines)))
        code.update(span)
        for i in span:
            if m := CAPTION.match(lines[i]):
                out[i] = m[1]
    in_math = False
    for i, line in enumerate(lines):
        if i in code:
            continue
        if line.strip() == "$$":  # display math over several lines
            in_math = not in_math
            continue
        if not in_math:
            out[i] = line
    return [(i + 1, clean(out[i], remove)) for i in sorted(out)]


def lab_lines(text: str, remove: list[re.Pattern[str]] | None = None) -> list[tuple[int, str]]:
    """(1-based line number, prose) for the Markdown cells of a jupytext percent lab."""
    out = []
    markdown = False
    for i, line in enumerate(text.splitlines()):
        if cell := CELL.match(line):
            markdown = "[markdown]" in cell[1]
        elif markdown:
            out.append((i + 1, clean(line[2:] if line.startswith("# ") else line.lstrip("#"), remove)))
    return out


def files(root: Path = ROOT) -> list[Path]:
    """The English pages, the English labs and the README (not CONTRIBUTING, whose style table names
    the variants it rules out)."""
    docs = root / "docs"
    return [*sorted(docs.rglob("*.en.md")), *sorted((docs / "labs").glob("*.en.py")), root / "README.md"]


def _name(path: Path, root: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


def prose_lines(path: Path, text: str) -> list[tuple[int, str]]:
    """(1-based line number, prose) of a page or (``.py``) a lab."""
    return lab_lines(text) if path.suffix == ".py" else markdown_lines(text)


def hits(path: Path, text: str | None = None, root: Path = ROOT) -> list[str]:
    """``file:line: variant -> chosen term`` for every variant in the prose of one file."""
    text = path.read_text(encoding="utf-8") if text is None else text
    found = sorted((n, m.start(), m[0], term) for n, line in prose_lines(path, text)
                   for pattern, term in PATTERNS for m in pattern.finditer(line))
    return [f"{_name(path, root)}:{n}: {variant!r} -> {term!r}" for n, _, variant, term in found]


def code_lines(path: Path, text: str) -> list[tuple[int, str]]:
    """(1-based line number, line) of the code of a page (its fences) or of a lab (its code cells)."""
    lines = text.splitlines()
    if path.suffix == ".py":
        prose = {n for n, _ in lab_lines(text)}
        return [(i, line) for i, line in enumerate(lines, 1) if i not in prose]
    return [(i + 1, lines[i]) for fence in parse_fences(text, "")
            for i in range(fence.start + 1, min(fence.start + 1 + len(fence.body), len(lines)))]


def spelling_hits(path: Path, text: str | None = None, root: Path = ROOT) -> list[str]:
    """British spellings in the code of an English page or lab: its docstrings, comments and strings
    are English prose too (the prose itself is scanned by :func:`hits`)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    return [f"{_name(path, root)}:{n}: {m[0]!r} -> 'American spelling' (in code)"
            for n, line in code_lines(path, text) for pattern in SPELLING for m in pattern.finditer(line)]


GLOSSARY_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*[^|]*[\u4e00-\u9fff][^|]*\|")


def glossary_terms(text: str) -> list[tuple[int, str]]:
    """(line, English term) of each row of the English glossary."""
    return [(i, m[1]) for i, line in enumerate(text.splitlines(), 1)
            if (m := GLOSSARY_ROW.match(line)) and m[1] != "English"]  # not the header


def _variants(term: str) -> list[str]:
    """A glossary term and the forms the prose may use it in: lower case, a plural, a parenthesized
    abbreviation apart ("feed-forward network (FFN)")."""
    base = re.sub(r"\s*\([^)]*\)", "", term).strip().lower()
    return [base, base + "s", base.removesuffix("y") + "ies", base + "es"]


def glossary_hits(root: Path = ROOT) -> list[str]:
    """Glossary terms that no English chapter page (``docs/NN-*.en.md``) uses in its prose, in any
    of the forms :func:`_variants` tries: the glossary pairs the terms the chapters use."""
    from tools.book.prose_stats import chapters

    prose = " ".join(line for p in chapters(root) for _, line in markdown_lines(p.read_text(encoding="utf-8")))
    prose = re.sub(r"\s+", " ", prose.lower())
    glossary = root / "docs/glossary.en.md"
    return [f"{_name(glossary, root)}:{n}: {term!r}"
            for n, term in glossary_terms(glossary.read_text(encoding="utf-8"))
            if not any(re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", prose) for v in _variants(term))]


def all_hits(root: Path = ROOT) -> list[str]:
    """Every variant in the prose and every British spelling in the code."""
    return ([h for path in files(root) for h in hits(path, root=root)]
            + [h for path in files(root) if path.suffix in (".md", ".py") and "docs" in path.parts
               for h in spelling_hits(path, root=root)])


# ------------------------------------------------------------------------------------------------
# Reports: rules counted until the prose is rewritten (see the module docstring).

# Words a title-case heading leaves in lower case (unless first or last, or after a colon).
SMALL = {"a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of", "on",
         "or", "per", "the", "to", "vs", "via", "with"}
H1 = re.compile(r"^# (.+?)(?:\s*\{[^}]*\})?\s*$", re.MULTILINE)
CHAPTER_PAGE = re.compile(r"^(\d\d)-.*\.en\.md$")
NUMBERED_H2 = re.compile(r"^## (?:\d+\.\d+|\d+\.\s)")
UNNUMBERED_OK = {"Summary", "Exercises", "Answers"}


def title_case_problems(title: str) -> list[str]:
    """The words of a title that break title case ("How this book is built" -> "this", "is",
    "built"). Code, math and words with digits, dots or underscores are left as they are."""
    title = INLINE_CODE.sub(" ", INLINE_MATH.sub(" ", title))
    words = [(w, i) for i, w in enumerate(re.findall(r"[^\s–—]+", title))]  # "3.1–3.7": one token
    bad = []
    after_colon = True  # the first word, and the first after a colon, is capitalized
    for n, (word, _) in enumerate(words):
        core = word.strip("\"'(),:;!?*")
        if not core or not core[0].isalpha() or re.search(r"[\d._√/]", core):
            after_colon = after_colon or word.endswith(":")  # "8.5 The ...": the number is no word
            continue
        first_or_last = after_colon or n == len(words) - 1
        after_colon = word.endswith(":")
        for part in core.split("-"):  # "Multi-Head", "Dot-Product"
            if part and part[0].islower() and (first_or_last or part.lower() not in SMALL):
                bad.append(part)
        if core.lower() in SMALL and core[0].isupper() and not first_or_last:
            bad.append(core)
    return bad


def mkdocs_config(root: Path = ROOT) -> dict:
    """``mkdocs.yml`` as plain strings (its ``!!python/name`` tags unresolved)."""
    import yaml

    return yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)


def nav_titles(config: dict) -> dict[str, str]:
    """The English nav titles (``nav_translations`` of the i18n plugin), by Chinese title."""
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    return next(lang["nav_translations"] for lang in i18n["languages"] if lang["locale"] == "en")


def nav_entries(items: list) -> list[tuple[str, str | None]]:
    """(Chinese title, page, or None for a section) of each entry of a nav, in order."""
    out: list[tuple[str, str | None]] = []
    for item in items:
        for title, target in (item.items() if isinstance(item, dict) else []):
            out.append((title, None if isinstance(target, list) else target))
            if isinstance(target, list):
                out += nav_entries(target)
    return out


def _h1(path: Path) -> tuple[int, str] | None:
    text = path.read_text(encoding="utf-8")
    return (text[:m.start()].count("\n") + 1, m[1].strip()) if (m := H1.search(text)) else None


def title_case_report(root: Path = ROOT) -> list[str]:
    """H1s of the English pages and English nav titles that are not in title case."""
    out = [f"mkdocs.yml: nav {en!r}: {bad}" for en in nav_titles(mkdocs_config(root)).values()
           if (bad := title_case_problems(en))]
    for page in sorted((root / "docs").rglob("*.en.md")):
        if (h1 := _h1(page)) and (bad := title_case_problems(h1[1])):
            out.append(f"{_name(page, root)}:{h1[0]}: H1 {h1[1]!r}: {bad}")
    return out


def h1_nav_report(root: Path = ROOT) -> list[str]:
    """A chapter's first page whose H1 ("Chapter 5: ...") differs from its nav section's title."""
    config = mkdocs_config(root)
    english, entries = nav_titles(config), nav_entries(config["nav"])
    out = []
    for (zh, target), (_, first) in itertools.pairwise(entries):
        page = root / "docs" / (first or "").replace(".md", ".en.md")
        if target is None and first and page.exists() and (h1 := _h1(page)) and h1[1].startswith("Chapter"):
            if h1[1] != english.get(zh, zh):
                out.append(f"{_name(page, root)}:{h1[0]}: H1 {h1[1]!r}, nav {english.get(zh, zh)!r}")
    return out


def chapter_reports(page: Path, root: Path = ROOT) -> dict[str, list[str]]:
    """Of one English chapter page: its unnumbered sections (H2s other than Summary and Exercises;
    the appendix pages, ``*-source``, hold reference sections and are left out), and the exercises
    that are not each a ``### Exercise N`` with its own answer (a ``???`` note under it)."""
    text = page.read_text(encoding="utf-8")
    name, lines = _name(page, root), text.splitlines()
    code = {i for f in parse_fences(text, "") for i in range(f.start, f.start + len(f.body) + 2)}
    appendix = page.name.endswith("-source.en.md")
    out: dict[str, list[str]] = {"numbered sections": [], "### Exercise N": []}
    exercises: list[tuple[int, str, bool]] | None = None  # (line, heading, has an answer)
    for i, line in enumerate(lines):
        if i in code:
            continue
        if line.startswith("## "):
            title = re.sub(r"\s*\{[^}]*\}\s*$", "", line[3:]).strip()
            exercises = [] if title in ("Exercises", "More exercises") else None
            if not appendix and not NUMBERED_H2.match(line) and title not in UNNUMBERED_OK:
                out["numbered sections"].append(f"{name}:{i + 1}: {line.strip()!r}")
        elif exercises is None:
            continue
        elif line.startswith("### "):
            exercises.append((i + 1, line.strip(), False))
            if not re.match(r"### Exercise \d+\b", line):
                out["### Exercise N"].append(f"{name}:{i + 1}: {line.strip()!r}")
        elif re.match(r"\s*(?:\?\?\?|!!!)", line) and exercises:
            exercises[-1] = (*exercises[-1][:2], True)
        elif not exercises and re.match(r"\d+\. ", line):
            out["### Exercise N"].append(f"{name}:{i + 1}: in a numbered list: {line[:50]!r}")
        if exercises is not None and i + 1 < len(lines) and lines[i + 1].startswith("## "):
            out["### Exercise N"] += [f"{name}:{n}: no answer under {h!r}" for n, h, ok in exercises if not ok]
            exercises = None
    if exercises:
        out["### Exercise N"] += [f"{name}:{n}: no answer under {h!r}" for n, h, ok in exercises if not ok]
    return out


def heading_reports(root: Path = ROOT) -> dict[str, list[str]]:
    """The heading rules: title case, a chapter's H1 equal to its nav title, numbered sections,
    the exercise format."""
    out = {"title case": title_case_report(root), "H1 = nav": h1_nav_report(root),
           "numbered sections": [], "### Exercise N": []}
    for page in sorted((root / "docs").glob("*.en.md")):
        if CHAPTER_PAGE.match(page.name):
            for rule, found in chapter_reports(page, root).items():
                out[rule] += found
    return out


# Line rules: a pattern over the prose of a line (or, with raw=True, over the line before math and code
# are taken out), and what the house writes instead.
REPORTS: dict[str, tuple[str, list[str]]] = {
    "section N.N": ("a section is cited as 'section N.N' (only numbers of real sections count)", [
        r"(?<![Ss]ection )(?<![Cc]hapter )(?<![Ff]igure )(?<![Tt]able )(?<![Ee]xercise )"
        r"\b(?:[Ii]n|[Ss]ee|of|from|and|to|under|like|cf\.) \[?(?P<section>(?:[1-9]|10)\.[1-9]\d?(?:\.\d+)?)\b"
        r"(?![.,]?\d)"]),
    "2,000": ("a thousands separator from 1,000 up (years and issue numbers aside)", [
        r"(?<![\d.,\w#-])(?!(?:19|20)\d\d\b)\d{4,}(?![\d,.]\d|\w)",
        r"(?<![\d.,\w#-])(?:19|20)\d\d(?= [a-z]+s\b)"]),  # "2000 pairs" is no year
    "92.9%": ("a percentage without a space", [r"\d %"]),
    "$10^{-5}$ in prose": ("`1e-5` in code only", [r"(?<![\w.])\d+(?:\.\d+)?e[-+]?\d+\b"]),
    "no half-math": ("'$n = 1024$', not '$n$ = 1024'", []),  # half_math(), on the line with its math
    "backticks": ("code identifiers in backticks", [
        r"\b\w+\(\)", r"\b(?:nn|F|torch|selfattn|tl|np|plt)\.[A-Za-z_]\w*",
        r"(?<![\w.$\\-])[a-z][a-z0-9]+(?:_[a-z0-9]+)+\b(?![\w-])"]),
    # A caption is plain text (no KaTeX, no code spans there): "d_k = 4" is how it writes math, and
    # block_q how it writes an identifier.
    "math in $...$": ("math in dollars, not as plain text ('B = 1', 'd_head = 64')", [
        r"(?<![\w$.\\-])[A-Za-z](?:_[a-z]+)? = \d+\b"]),
}
NOT_IN_CAPTIONS = {"math in $...$", "backticks"}
REPORT_PATTERNS = [(re.compile(p), name) for name, (_, ps) in REPORTS.items() for p in ps]
AFTER_MATH = re.compile(r"\s*(?:=|<|>|≤|≥)\s*[-−]?\d")
SECTION_HEADING = re.compile(r"^#{1,4} (?:Chapter )?(\d+(?:\.\d+)*)[\s:]", re.MULTILINE)


def sections(root: Path = ROOT) -> set[str]:
    """The numbers of the sections of the English edition, from its headings ("8.3.5", "4.4")."""
    return {m[1] for p in (root / "docs").glob("*.en.md")
            for m in SECTION_HEADING.finditer(p.read_text(encoding="utf-8"))}


def half_math(line: str) -> list[str]:
    """Inline math followed by a relation and a number outside it: "$n$ = 1024"."""
    line = INLINE_CODE.sub(" ", HTML_COMMENT.sub(" ", line))
    return [line[m.start():m.end() + 8] for m in INLINE_MATH.finditer(line) if AFTER_MATH.match(line, m.end())]


def line_reports(path: Path, text: str | None = None, root: Path = ROOT,
                 numbers: set[str] | None = None) -> dict[str, list[str]]:
    """The places of one file that each line rule of ``REPORTS`` finds; ``numbers``: the section
    numbers that "section N.N" looks for (:func:`sections`)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    numbers = sections(root) if numbers is None else numbers
    prose = [(n, line) for n, line in prose_lines(path, text) if not line.lstrip().startswith(":::")]
    raw = text.splitlines()
    captions = {n for n, _ in prose if path.suffix == ".md" and CAPTION.match(raw[n - 1])}
    out: dict[str, list[str]] = {name: [] for name in REPORTS}
    for pattern, name in REPORT_PATTERNS:
        out[name] += [f"{_name(path, root)}:{n}: {m[0]!r}" for n, line in prose for m in pattern.finditer(line)
                      if (name != "section N.N" or m["section"] in numbers)
                      and not (name in NOT_IN_CAPTIONS and n in captions)]
    out["no half-math"] = [f"{_name(path, root)}:{n}: {h!r}" for n, _ in prose_lines(path, text)
                           for h in half_math(raw[n - 1])]
    return out


def all_reports(root: Path = ROOT) -> dict[str, list[str]]:
    """Every place each report rule finds, by rule: the line rules of ``REPORTS`` over every
    scanned file, then the heading rules (:func:`heading_reports`)."""
    out: dict[str, list[str]] = {name: [] for name in REPORTS}
    numbers = sections(root)
    for path in files(root):
        for name, found in line_reports(path, root=root, numbers=numbers).items():
            out[name] += found
    return {**heading_reports(root), **out, "glossary terms in the chapters": glossary_hits(root)}


def counts(found: list[str]) -> dict[str, int]:
    """The number of hits per chosen term (the last quoted name of a hit)."""
    out: dict[str, int] = {}
    for hit in found:
        term = re.findall(r"-> '([^']*)'", hit)
        key = term[-1] if term else hit.rsplit("-> ", 1)[-1]
        out[key] = out.get(key, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.book.terms",
        description="The variants of the English edition's chosen terms (tests/book/test_terms.py "
                    "fails on any), then a count per rule, the house rules that need a sentence "
                    "rewritten included.")
    parser.add_argument("--reports", action="store_true", help="list each place a report rule finds")
    parser.add_argument("--root", type=Path, default=ROOT, help="scan this checkout instead")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = args.root.resolve()
    found = all_hits(root)
    print("\n".join(found) or "no variants")
    reports = all_reports(root)
    if args.reports:
        for name, places in reports.items():
            print(f"\n{name}: {len(places)}")
            print("\n".join(f"  {p}" for p in places))
    per_term = counts(found)
    print(f"\n{'rule':40}  count  kind")
    for term in TERMS:
        print(f"{term:40}  {per_term.get(term, 0):>5}  fails")
    for name, places in reports.items():
        print(f"{name:40}  {len(places):>5}  fails")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
