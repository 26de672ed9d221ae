"""`make serve` sees a save within 0.1 s: tools/site/watching.py on mkdocs' own LiveReloadServer."""

from __future__ import annotations

from pathlib import Path

from mkdocs.livereload import LiveReloadServer

from tools.site import watching


def test_every_watch_polls_at_the_faster_interval(tmp_path: Path) -> None:
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path))
    (tmp_path / "docs").mkdir()
    (tmp_path / "extra").mkdir()
    server.watch(str(tmp_path / "docs"))  # scheduled before on_serve, as mkdocs schedules docs/
    assert [e.timeout for e in server.observer.emitters] == [0.5], "mkdocs' own interval (the test's premise)"
    assert watching.poll_faster(server) is server
    server.watch(str(tmp_path / "extra"))  # scheduled after on_serve, as mkdocs schedules `watch:` paths
    assert sorted(e.timeout for e in server.observer.emitters) == [watching.POLL_S] * 2
    assert server.observer.timeout == watching.POLL_S


def test_the_hook_wires_it() -> None:
    from tools.site import hooks as mkdocs_hooks

    class Server:
        class observer:  # stands for the attribute
            _timeout = 0.5
            emitters: list[object] = []

    assert mkdocs_hooks.on_serve(Server, config=None, builder=None) is Server
    assert Server.observer._timeout == watching.POLL_S
