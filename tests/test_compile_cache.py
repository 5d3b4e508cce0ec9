"""The compile cache keyed by content (``workbench/_runtime/compile_cache.py``, issue 53).

What counts as a cache hit or miss is numba's own account (the dispatcher's
``stats.cache_hits`` and ``stats.cache_misses``), read in fresh processes so that nothing is
held in memory between the runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from workbench._runtime import compile_cache

ROOT = Path(__file__).resolve().parents[1]

#: Runs in a fresh interpreter: the locator for the package copy in argv[1] with its cache under
#: argv[2], then one call of pkg.engine.k.f; prints the result and numba's hit/miss counts.
_RUN = textwrap.dedent("""
    import importlib, json, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from workbench._runtime.compile_cache import make_locator
    from numba.core import caching
    copy, cache = Path(sys.argv[1]), Path(sys.argv[2])
    caching.CacheImpl._locator_classes.insert(0, make_locator(copy / "pkg", cache, ("engine",)))
    sys.path.insert(0, str(copy))
    f = importlib.import_module("pkg.engine.k").f
    print(json.dumps({{"value": int(f(3)), "hits": len(f.stats.cache_hits), "misses": len(f.stats.cache_misses)}}))
""").format(root=str(ROOT))


def _package(where: Path, offset: int = 1) -> Path:
    """A package copy whose kernel ``f`` inlines a callee from another module of its folder."""
    engine = where / "pkg" / "engine"
    engine.mkdir(parents=True)
    (where / "pkg" / "__init__.py").write_text("")
    (engine / "__init__.py").write_text("")
    (engine / "callee.py").write_text(f"import numba\n@numba.njit(cache=True)\ndef g(x):\n    return x + {offset}\n")
    (engine / "k.py").write_text("import numba\nfrom .callee import g\n"
                                 "@numba.njit(cache=True)\ndef f(x):\n    return g(x * 2)\n")
    return where


def _call(copy: Path, cache: Path) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", _RUN, str(copy), str(cache)], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_digest_is_the_same_for_two_copies_and_changes_with_any_byte(tmp_path: Path) -> None:
    a, b = _package(tmp_path / "a"), _package(tmp_path / "b")
    digest = compile_cache.source_digest(a / "pkg", ("engine",))
    assert digest == compile_cache.source_digest(b / "pkg", ("engine",))
    (b / "pkg" / "engine" / "notes.txt").write_text("not a source file")
    assert compile_cache.source_digest(b / "pkg", ("engine",)) == digest
    callee = b / "pkg" / "engine" / "callee.py"
    callee.write_text(callee.read_text() + " ")
    assert compile_cache.source_digest(b / "pkg", ("engine",)) != digest


def test_a_second_copy_elsewhere_loads_the_first_copys_machine_code(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = _call(_package(tmp_path / "clone-1"), cache)
    second = _call(_package(tmp_path / "venv" / "site-packages"), cache)
    assert first == {"value": 7, "hits": 0, "misses": 1}
    assert second == {"value": 7, "hits": 1, "misses": 0}


def test_an_edited_callee_in_another_file_is_never_served_stale(tmp_path: Path) -> None:
    """Numba's own per-file stamp would serve f's machine code with the old g inlined: 7."""
    cache = tmp_path / "cache"
    copy = _package(tmp_path / "clone")
    assert _call(copy, cache)["value"] == 7
    (copy / "pkg" / "engine" / "callee.py").write_text("import numba\n@numba.njit(cache=True)\ndef g(x):\n"
                                                        "    return x + 100\n")
    assert _call(copy, cache) == {"value": 106, "hits": 0, "misses": 1}


def test_import_workbench_routes_its_kernels_and_only_them_to_the_digest_folder(tmp_path: Path) -> None:
    probe = textwrap.dedent("""
        import numba
        from workbench.engine import ops
        from workbench.numbers import formats
        @numba.njit(cache=True)
        def users_own(x):
            return x
        for kernel in (ops.decompose_checked, formats._round_kernel, users_own):
            print(type(kernel._cache._impl._locator).__name__, kernel._cache._cache_path)
    """)
    script = tmp_path / "probe.py"
    script.write_text(probe)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                          env=dict(env, WORKBENCH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split(" ", 1) for line in done.stdout.strip().splitlines()]
    digest = compile_cache.source_digest()
    assert lines[0] == ["ContentKeyedLocator", str(tmp_path / "cache" / digest / "engine")]
    assert lines[1] == ["ContentKeyedLocator", str(tmp_path / "cache" / digest / "numbers")]
    assert lines[2][0] != "ContentKeyedLocator"       # a user's kernel: numba's own locators
    off = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                         env=dict(env, WORKBENCH_CACHE_DIR="off", PYTHONPATH=str(ROOT)))
    assert off.returncode == 0, off.stderr[-3000:]
    assert "ContentKeyedLocator" not in off.stdout


def test_prune_removes_only_other_digests_unused_for_the_keep_days(tmp_path: Path) -> None:
    current, recent, stale = "a" * 20, "b" * 20, "c" * 20
    for name in (current, recent, stale, "not-a-digest"):
        (tmp_path / name).mkdir()
    old = time.time() - (compile_cache.KEEP_DAYS + 1) * 86400
    for name in (current, stale, "not-a-digest"):
        os.utime(tmp_path / name, (old, old))
    removed = compile_cache.prune(tmp_path, keep=current)
    assert removed == [tmp_path / stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([current, recent, "not-a-digest"])
    assert time.time() - (tmp_path / current).stat().st_mtime < 3600      # renewed


@pytest.mark.parametrize(("env", "expected"), [
    ({"WORKBENCH_CACHE_DIR": "/x", "NUMBA_CACHE_DIR": "/y"}, Path("/x")),
    ({"NUMBA_CACHE_DIR": "/y"}, Path("/y")),
    ({"XDG_CACHE_HOME": "/z"}, Path("/z/workbench")),
    ({"WORKBENCH_CACHE_DIR": "off", "NUMBA_CACHE_DIR": "/y"}, None),
])
def test_cache_root_follows_the_environment(env: dict[str, str], expected: Path | None) -> None:
    assert compile_cache.cache_root(env) == expected


def test_compile_notice_says_it_once_and_only_when_something_compiles() -> None:
    import io

    import numba

    @numba.njit
    def fresh(x):       # defined here: compiled on its first call, never cached
        return x + 1

    said = io.StringIO()
    with compile_cache.compile_notice(said):
        fresh(1)
        fresh(2.0)      # a second signature: compiled too, not said again
    assert said.getvalue().count("\n") == 1 and "compiling kernels for their first use (fresh first" in said.getvalue()
    quiet = io.StringIO()
    with compile_cache.compile_notice(quiet):
        fresh(3)        # compiled already
    assert quiet.getvalue() == ""


def _cli(tmp_path: Path, terminal: bool) -> str:
    """``workbench explain`` on an empty cache, its stderr a terminal or a pipe; stderr's text."""
    import pty

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env.update(WORKBENCH_CACHE_DIR=str(tmp_path / ("tty" if terminal else "pipe")), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "workbench", "explain", "--device", "V100", "--a", "1,0x1p-24", "--b", "1,1",
               "--c", "0"]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr
    main, follower = pty.openpty()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:         # the terminal closed with the process
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(timeout=300) == 0
    finally:
        os.close(main)
    return b"".join(chunks).decode()


def test_the_command_line_says_it_compiles_on_a_terminal_only(tmp_path: Path) -> None:
    on_terminal = _cli(tmp_path, terminal=True)
    assert "workbench: compiling kernels for their first use" in on_terminal
    assert str(tmp_path / "tty" / compile_cache.source_digest()) in on_terminal.replace("\r\n", "").replace("\n", "")
    assert "compiling kernels" not in _cli(tmp_path, terminal=False)
