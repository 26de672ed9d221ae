"""python -m selfattn.charlm (chapter 10): training, resuming, sampling, and bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import selfattn.charlm as charlm
from selfattn.charlm import CharError, Vocab, load_checkpoint, main

ROOT = Path(__file__).resolve().parents[1]
TEXT = "def attend(q, k, v):\n    return softmax(q @ k.T) @ v  # 注意力\n" * 20
TINY = ["--block-size", "8", "--d-model", "16", "--heads", "2", "--layers", "1",
        "--batch-size", "4"]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def test_vocab_round_trip_and_unknown_characters() -> None:
    v = Vocab.of(TEXT)
    assert v.chars == "".join(sorted(set(TEXT)))
    assert v.decode(v.encode("q @ k 注意力")) == "q @ k 注意力"
    with pytest.raises(CharError, match="'Zé'"):
        v.encode("qZé")


def test_train_saves_atomically_then_samples(corpus: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    ckpt = tmp_path / "m.pt"
    rc, out, err = run(["train", str(corpus), "--steps", "6", "--save-every", "4",
                        "--out", str(ckpt), *TINY], capsys)
    assert rc == 0, err
    assert "step 6/6" in err and "tok/s" in err and "loss" in err  # the progress line
    assert "val loss" in out
    assert ckpt.exists() and not list(tmp_path.glob("*.tmp"))
    state = load_checkpoint(ckpt)
    assert state["step"] == 6 and state["chars"] == Vocab.of(TEXT).chars
    rc, out, err = run(["sample", str(ckpt), "--prompt", "def ", "--tokens", "12"], capsys)
    assert rc == 0, err
    assert out.startswith("def ") and len(out) == 4 + 12 + 1  # print adds "\n"


def test_resume_equals_one_uninterrupted_run(corpus: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    assert run(["train", str(corpus), "--steps", "4", "--out", str(a), *TINY], capsys)[0] == 0
    assert run(["train", str(corpus), "--steps", "2", "--out", str(b), *TINY], capsys)[0] == 0
    rc, _, err = run(["train", str(corpus), "--steps", "4", "--out", str(b), "--resume", *TINY],
                     capsys)
    assert rc == 0 and "step 4/4" in err
    sa, sb = load_checkpoint(a), load_checkpoint(b)
    assert sb["step"] == 4
    for k, t in sa["model"].items():
        assert torch.equal(t, sb["model"][k]), k


def test_interrupted_save_keeps_the_old_checkpoint(corpus: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ckpt = tmp_path / "m.pt"
    assert run(["train", str(corpus), "--steps", "2", "--out", str(ckpt), *TINY], capsys)[0] == 0
    before = ckpt.read_bytes()
    real_save = torch.save

    def crash(obj: object, f: str | os.PathLike[str]) -> None:  # dies half-way through writing
        real_save(obj, f)
        Path(f).write_bytes(Path(f).read_bytes()[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(charlm.torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        main(["train", str(corpus), "--steps", "4", "--out", str(ckpt), "--resume", *TINY])
    assert ckpt.read_bytes() == before
    assert load_checkpoint(ckpt)["step"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "file not found"), (b"", "is empty"), (b"ok \xff\xfe bad", "not UTF-8")],
)
def test_bad_text_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  content: bytes | None, message: str) -> None:
    path = tmp_path / "in.txt"
    if content is not None:
        path.write_bytes(content)
    rc, _, err = run(["train", str(path), "--out", str(tmp_path / "m.pt"), *TINY], capsys)
    assert rc == 1 and err.startswith("charlm: error:") and message in err, err
    assert not (tmp_path / "m.pt").exists()


def test_too_short_text_and_bad_sizes_are_refused(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "short.txt"
    path.write_text("abc", encoding="utf-8")
    rc, _, err = run(["train", str(path), *TINY], capsys)
    assert rc == 1 and "too short" in err
    rc, _, err = run(["train", str(path), "--steps", "0"], capsys)
    assert rc == 1 and "--steps must be positive" in err


@pytest.mark.parametrize("kind", ["random", "truncated", "not-a-dict", "missing"])
def test_corrupt_checkpoint_is_refused(corpus: Path, tmp_path: Path, kind: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    ckpt = tmp_path / "m.pt"
    if kind == "random":
        ckpt.write_bytes(os.urandom(2000))
    elif kind == "truncated":
        assert run(["train", str(corpus), "--steps", "1", "--out", str(ckpt), *TINY], capsys)[0] == 0
        ckpt.write_bytes(ckpt.read_bytes()[:500])
    elif kind == "not-a-dict":
        torch.save([1, 2, 3], ckpt)
    rc, out, err = run(["sample", str(ckpt), "--prompt", "def"], capsys)
    assert rc == 1 and err.startswith("charlm: error:") and out == "", err
    assert ("not found" if kind == "missing" else "checkpoint") in err


class Payload:
    """Pickles to a call of open(marker, "w"): loading it with pickle would create the file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_checkpoint_with_pickled_code_is_refused_not_executed(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    marker, ckpt = tmp_path / "executed", tmp_path / "evil.pt"
    torch.save({"format": charlm.FORMAT, "model": Payload(marker)}, ckpt)
    rc, _, err = run(["sample", str(ckpt), "--prompt", "def"], capsys)
    assert rc == 1 and "refused" in err and "weights_only" in err, err
    assert not marker.exists(), "the pickled call was executed"
    torch.load(ckpt, weights_only=False)  # the crafted file really does execute code when trusted
    assert marker.exists()


def test_prompt_outside_the_vocabulary_is_refused(corpus: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ckpt = tmp_path / "m.pt"
    assert run(["train", str(corpus), "--steps", "1", "--out", str(ckpt), *TINY], capsys)[0] == 0
    rc, out, err = run(["sample", str(ckpt), "--prompt", "def 你好"], capsys)
    assert rc == 1 and "not in the vocabulary" in err and "你好" in err and out == ""


@pytest.mark.slow
def test_module_entry_point_exits_non_zero(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "selfattn.charlm", "train",
                           str(tmp_path / "nope.txt")], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 1 and "charlm: error: file not found" in proc.stderr
