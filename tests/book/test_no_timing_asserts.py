"""No check of the book or of its tests depends on a wall-clock time.

A time measured on a busy machine can be anything: a check on it flakes (chapter 1 once asserted
that the RNN is 4x slower at 16x the length, and failed at a ratio of 4 on a quiet machine).
Times may be printed; they are never asserted and never compared as expected output. Claims
about cost are checked on counted steps, FLOPs (``torch.utils.flop_counter``) or bytes.

The lint parses the Python of every program pytest-codeblocks runs from ``docs/`` (both
editions; a ``cont`` chain is one program, see ``tools/testing/codeblocks.py``), the code cells of the
labs (one kernel: one program per lab), and the files of ``tests/``, ``src/``, ``tools/`` and
``benchmarks/``. It follows a value taken from a clock (``time.perf_counter()``, ``time.time()``,
``timeit``, ``torch.utils.benchmark``, ``datetime.now()``...) through assignments, containers
(``ts.append(dt)``, ``times[n] = ...``), loops and the return values of functions, and fails,
naming ``file:line``, on an ``assert`` (or ``if ...: raise``, or an ``assert...()`` call) whose
condition reads such a value, and on a program with an expected output that prints one.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.testing.codeblocks import Chain, page_chains

ROOT = Path(__file__).resolve().parents[2]

CLOCK_MODULES = {
    "time": {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
             "process_time", "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime",
             "clock_gettime_ns"},
    "timeit": {"timeit", "repeat", "default_timer"},
    "datetime": {"now", "utcnow", "today"},  # datetime.datetime.now(), datetime.date.today()
}
# Methods that run a timer and return its measurement (timeit.Timer, torch.utils.benchmark.Timer).
TIMER_METHODS = {"timeit", "autorange", "blocked_autorange", "adaptive_autorange", "elapsed_time"}
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"}
MAGIC = re.compile(r"^\s*[%!]")
# Every clock above is reached through one of these words: a program without them holds no time.
CLOCK_WORDS = re.compile(r"\b(time|timeit|datetime|benchmark)\b|\.(timeit|autorange|blocked_autorange|"
                         r"adaptive_autorange|elapsed_time)\b")


@dataclass
class _State:
    names: set[str] = field(default_factory=set)  # names that hold a time (or a container of times)
    keys: set[str] = field(default_factory=set)  # dict keys whose values are times: row["explicit_ms"]

    def copy(self) -> _State:
        return _State(set(self.names), set(self.keys))

    def merge(self, other: _State) -> None:
        self.names |= other.names
        self.keys |= other.keys


class _Flow:
    """Follow the values taken from a clock through a program, statement by statement, in order.

    A name holds a time from an assignment of an expression that reads one until it is assigned
    something else; both branches of an ``if`` and every loop body (twice, for values carried
    round the loop) are followed. A dict literal with a time under a constant key marks that key,
    not the whole container (``rows.append({"ms": t, "mib": m})``: ``r["mib"]`` is no time).
    Functions whose return value reads a time are clocks themselves. Each check is judged with
    what holds at its place in the program.
    """

    def __init__(self, tree: ast.Module, checked_output: bool) -> None:
        self.clock_names: set[str] = set()  # names bound to a clock function (from time import perf_counter)
        self.clock_modules: set[str] = set()  # names bound to a clock module (import time as t)
        self.timed_calls: set[str] = set()  # functions (by name) whose return value holds a time
        self.checked_output = checked_output
        self.found: dict[tuple[int, str], None] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in CLOCK_MODULES or alias.name.startswith("torch.utils.benchmark"):
                        self.clock_modules.add(alias.asname or top)
            elif isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                for alias in node.names:
                    if alias.name in CLOCK_MODULES.get(top, ()) or (top == "datetime" and alias.name in ("datetime", "date")):
                        self.clock_names.add(alias.asname or alias.name)
                    if node.module.startswith("torch.utils") and alias.name == "benchmark":
                        self.clock_modules.add(alias.asname or alias.name)
        self.everything = _State()  # all that ever held a time (what a function body may read at call time)
        for _ in range(3):  # the clocks among the functions, then the checks with them known
            self.found.clear()
            before = (len(self.timed_calls), len(self.everything.names), len(self.everything.keys))
            self.block(tree.body, _State())
            if before == (len(self.timed_calls), len(self.everything.names), len(self.everything.keys)):
                break

    # -- expressions

    def _base(self, node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def is_clock_call(self, node: ast.Call) -> bool:
        f = node.func
        if isinstance(f, ast.Name):
            return f.id in self.clock_names or f.id in self.timed_calls
        if isinstance(f, ast.Attribute):
            if f.attr in TIMER_METHODS:
                return True
            base = self._base(f)
            return base in self.clock_modules or base in self.clock_names
        return False

    def tainted(self, node: ast.AST | None, state: _State) -> bool:
        if node is None:
            return False
        for sub in _walk_scope(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in state.names:
                return True
            if isinstance(sub, ast.Subscript) and _key(sub) in state.keys:
                return True
            if isinstance(sub, ast.Call) and self.is_clock_call(sub):
                return True
            if isinstance(sub, ast.Lambda) and self.tainted(sub.body, state):
                return True
        return False

    def _fields(self, value: ast.AST, state: _State) -> set[str] | None:
        """The keys holding a time in a dict literal whose other values hold none; None if it is no such dict."""
        if isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            return {k.value for k, v in zip(value.keys, value.values, strict=True) if self.tainted(v, state)}  # type: ignore[union-attr]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and not value.args:
            return {k.arg for k in value.keywords if k.arg and self.tainted(k.value, state)}
        return None

    # -- statements

    def _bind(self, target: ast.AST, timed: bool, state: _State) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._bind(t, timed, state)
        elif isinstance(target, ast.Name):
            (state.names.add if timed else state.names.discard)(target.id)
        elif isinstance(target, ast.Subscript) and _key(target) is not None:
            if timed:
                state.keys.add(_key(target))  # type: ignore[arg-type]
        elif timed and (base := self._base(target)):
            state.names.add(base)
        if timed:
            self.everything.merge(state)

    def assign(self, targets: list[ast.AST], value: ast.AST | None, state: _State) -> None:
        fields = self._fields(value, state) if value is not None else None
        if fields is not None:
            state.keys |= fields
            self.everything.merge(state)
            timed = False
        else:
            timed = self.tainted(value, state)
        for t in targets:
            self._bind(t, timed, state)

    def block(self, body: list[ast.stmt], state: _State) -> None:
        for node in body:
            self.statement(node, state)

    def statement(self, node: ast.stmt, state: _State) -> None:
        self.check(node, state)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = state.copy()
            inner.merge(self.everything)  # a function reads globals when it is called, not where it is defined
            args = node.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a:
                    inner.names.discard(a.arg)
            returns = _State()
            self.function_body(node.body, inner, returns)
            if returns.names:
                self.timed_calls.add(node.name)
            state.names.discard(node.name)
        elif isinstance(node, ast.ClassDef):
            self.block(node.body, state)
        elif isinstance(node, ast.Assign):
            if isinstance(node.value, ast.Lambda) and self.tainted(node.value.body, state):
                self.timed_calls.update(t.id for t in node.targets if isinstance(t, ast.Name))
            self.assign(node.targets, node.value, state)
        elif isinstance(node, ast.AnnAssign):
            self.assign([node.target], node.value, state)
        elif isinstance(node, ast.AugAssign):
            target = node.target
            held = self._base(target) in state.names or (isinstance(target, ast.Subscript) and _key(target) in state.keys)
            if held or self.tainted(node.value, state):
                self._bind(node.target, True, state)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for _ in range(2):  # a value carried round the loop
                self._bind(node.target, self.tainted(node.iter, state), state)
                branch = state.copy()
                self.block(node.body, branch)
                state.merge(branch)
            self.block(node.orelse, state)
        elif isinstance(node, ast.While):
            for _ in range(2):
                branch = state.copy()
                self.block(node.body, branch)
                state.merge(branch)
            self.block(node.orelse, state)
        elif isinstance(node, ast.If):
            other = state.copy()
            self.block(node.body, state)
            self.block(node.orelse, other)
            state.merge(other)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, self.tainted(item.context_expr, state), state)
            self.block(node.body, state)
        elif isinstance(node, ast.Try):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                branch = state.copy()
                self.block(part, branch)
                state.merge(branch)
        elif isinstance(node, ast.Expr):
            self.expression(node.value, state)

    def function_body(self, body: list[ast.stmt], state: _State, returns: _State) -> None:
        for node in body:
            self.statement(node, state)
            for sub in _walk_scope(node):
                if isinstance(sub, (ast.Return, ast.Yield, ast.YieldFrom)) and self.tainted(sub.value, state):
                    returns.names.add("return")

    def expression(self, node: ast.expr, state: _State) -> None:
        """``ts.append(dt)``, ``rows.append({"ms": dt})``: a container takes in a time."""
        for sub in _walk_scope(node):
            if isinstance(sub, ast.NamedExpr):
                self.assign([sub.target], sub.value, state)
            if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in MUTATORS):
                continue
            base = self._base(sub.func.value)
            for arg in [*sub.args, *(k.value for k in sub.keywords)]:
                fields = self._fields(arg, state)
                if fields is not None:
                    state.keys |= fields
                elif base and self.tainted(arg, state):
                    state.names.add(base)
            self.everything.merge(state)

    # -- the checks

    def check(self, node: ast.stmt, state: _State) -> None:
        """Judge the checks of ``node`` itself (not of the statements nested in it: they come in order)."""
        if isinstance(node, ast.Assert):
            self._judge(node, node.test, "assert on a time", state)
        elif isinstance(node, ast.If) and _raises(node.body):
            self._judge(node, node.test, "if <time>: raise", state)
        own = [node] if not isinstance(node, (ast.For, ast.While, ast.If, ast.With, ast.Try, ast.FunctionDef,
                                             ast.AsyncFunctionDef, ast.ClassDef, ast.AsyncFor, ast.AsyncWith)) else []
        own += [getattr(node, a) for a in ("test", "iter", "items") if isinstance(getattr(node, a, None), ast.AST)]
        for part in own:
            for sub in _walk_scope(part):
                if not isinstance(sub, ast.Call):
                    continue
                f = sub.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                args = ast.Tuple([*sub.args, *(k.value for k in sub.keywords)], ast.Load())
                if name.startswith("assert"):
                    self._judge(sub, args, "assert call on a time", state)
                elif name == "print" and isinstance(f, ast.Name) and self.checked_output:
                    self._judge(sub, args, "a time printed into checked expected output", state)

    def _judge(self, node: ast.AST, test: ast.AST, what: str, state: _State) -> None:
        if self.tainted(test, state):
            self.found[(node.lineno, what)] = None


def _key(node: ast.Subscript) -> str | None:
    s = node.slice
    return s.value if isinstance(s, ast.Constant) and isinstance(s.value, str) else None


def _walk_scope(node: ast.AST):  # type: ignore[no-untyped-def]
    """``ast.walk`` that yields a nested function or lambda but does not enter it (it is a scope of its own)."""
    todo = [node]
    while todo:
        sub = todo.pop()
        yield sub
        if sub is node or not isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(sub))


def _raises(body: list[ast.stmt]) -> bool:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("fail", "exit"):
            return True
    return False


def timing_checks(code: str, checked_output: bool = False) -> list[tuple[int, str]]:
    """(line, what) for each check of ``code`` that reads a time; with ``checked_output``, also each print of one."""
    if not CLOCK_WORDS.search(code):  # no clock to start from: nothing to follow (and no parse)
        return []
    flow = _Flow(ast.parse(code), checked_output)
    return sorted(flow.found)


def _lab_code(path: Path) -> tuple[str, list[int]]:
    """The code cells of a lab (jupytext percent script) as one program: magics blanked, line numbers kept."""
    lines, keep, in_code = path.read_text(encoding="utf-8").splitlines(), [], False
    for line in lines:
        if line.startswith("# %%"):
            in_code = "[markdown]" not in line
            keep.append("")
        else:
            keep.append(line if in_code and not MAGIC.match(line) else "")
    return "\n".join(keep) + "\n", list(range(1, len(lines) + 1))


def programs() -> list[tuple[str, str, bool, Chain | None]]:
    """(name, code, checked output, chain) for everything the lint reads."""
    found: list[tuple[str, str, bool, Chain | None]] = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for c in page_chains(page, ROOT):
            found.append((f"{c.page}:{c.line}", c.code, c.expected is not None, c))
    for lab in sorted((ROOT / "docs" / "labs").glob("*.py")):
        found.append((lab.relative_to(ROOT).as_posix(), _lab_code(lab)[0], False, None))
    for folder in ("tests", "src", "tools", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found.append((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"), False, None))
    return found


def test_no_check_reads_a_wall_clock_time() -> None:
    problems, count = [], 0
    for name, code, checked, chain in programs():
        count += 1
        for line, what in timing_checks(code, checked):
            where = chain.where(line) if chain else f"{name}:{line}"
            problems.append(f"{where}: {what}: {code.splitlines()[line - 1].strip()}")
    assert count > 300, f"only {count} programs read: is docs/ there?"
    assert not problems, "count steps, FLOPs or bytes instead:\n  " + "\n  ".join(problems)


# ------------------------------------------------------------------------------ the lint can fail

CAUGHT = {
    "chapter-1": """
import time
def median_ms(f, x, repeat=7):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(x)
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[repeat // 2] * 1e3
times = {}
for n in (32, 512):
    r, a = times[n] = median_ms(rnn, n), median_ms(attn, n)
assert times[512][0] > 4 * times[32][0]
""",
    "difference": "import time\nt0 = time.time()\nwork()\nassert time.time() - t0 < 1.0\n",
    "alias": "import time as clock\nstart = clock.monotonic()\nwork()\nelapsed = clock.monotonic() - start\n"
             "if elapsed > 5:\n    raise AssertionError('slow')\n",
    "from-import": "from time import perf_counter as pc\nt = pc()\nd = [pc() - t]\nassert max(d) < 2\n",
    "timeit": "import timeit\nassert timeit.timeit('1+1', number=10) < 1\n",
    "timeit-func": "from timeit import timeit\nbest = min(timeit(f, number=3) for f in fs)\nassert best > 0\n",
    "torch-benchmark": "from torch.utils import benchmark\nm = benchmark.Timer('f()').blocked_autorange()\n"
                       "assert m.median < 1e-3\n",
    "in-test": "import time\ndef test_fast():\n    t0 = time.perf_counter()\n    run()\n"
               "    dt = time.perf_counter() - t0\n    assert dt < 1, dt\n",
    "returned": "import time\ndef clock():\n    return time.perf_counter()\nx = clock()\nassert x > 0\n",
    "aug": "import time\ntotal = 0.0\nfor f in fs:\n    t0 = time.perf_counter(); f()\n"
           "    total += time.perf_counter() - t0\nassert total < 10\n",
    "assert-call": "import time\nt0 = time.perf_counter()\nself.assertLess(time.perf_counter() - t0, 1)\n",
    "datetime": "from datetime import datetime\nt0 = datetime.now()\nassert (datetime.now() - t0).seconds < 1\n",
}
CHECKED_OUTPUT = "import time\nt0 = time.perf_counter()\nprint(f'{time.perf_counter() - t0:.1f} s')\n"
NOT_CAUGHT = {
    "printed-only": "import time\nt0 = time.perf_counter()\nsteps = run()\nprint(time.perf_counter() - t0)\n"
                    "assert steps == 16\n",
    "flops": "from torch.utils.flop_counter import FlopCounterMode\nwith FlopCounterMode(display=False) as fc:\n"
             "    f()\nassert fc.get_total_flops() == 65536\n",
    "a-name-like-time": "times = [1, 2]\nelapsed = 3\nassert times[0] == 1 and elapsed == 3\n",
    "other-scope": "import time\ndef timed():\n    t = time.perf_counter()\n    print(t)\n"
                   "def check():\n    t = 3\n    assert t == 3\n",
}


@pytest.mark.parametrize("code", CAUGHT.values(), ids=CAUGHT.keys())
def test_the_lint_catches(code: str) -> None:
    assert timing_checks(code), code


@pytest.mark.parametrize("code", NOT_CAUGHT.values(), ids=NOT_CAUGHT.keys())
def test_the_lint_lets_pass(code: str) -> None:
    assert timing_checks(code) == [], code


def test_a_time_in_checked_output_is_caught() -> None:
    assert timing_checks(CHECKED_OUTPUT, checked_output=True) == [(3, "a time printed into checked expected output")]
    assert timing_checks(CHECKED_OUTPUT) == []  # printed, not checked: allowed


def test_a_failure_names_the_page_and_line() -> None:
    from tools.testing.codeblocks import chains

    page = "# t\n\n```python\nimport time\nt0 = time.time()\n```\n\n<!--pytest-codeblocks:cont-->\n\n```python\nassert time.time() > t0\n```\n"
    (chain,) = chains(page, "docs/x.md")
    ((line, _),) = timing_checks(chain.code)
    assert chain.where(line) == "docs/x.md:11"
