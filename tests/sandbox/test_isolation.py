"""The OS-level layers on their own, each in a throwaway subprocess: seccomp, network namespace, rlimits,
privilege drop. These hold even if the Python-level layers were bypassed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from sandbox import seccomp

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(not seccomp.seccomp_supported(), reason="seccomp filter is x86_64 only")
def test_seccomp_blocks_processes_network_and_signals_to_others() -> None:
    out = _run("""
        import os, socket
        from sandbox import isolation, seccomp
        assert seccomp.install_seccomp()
        def attempt(name, fn):
            try:
                fn()
                print(name, "allowed")
            except OSError as err:
                print(name, "denied", err.errno)
        attempt("fork", os.fork)
        attempt("socket", socket.socket)
        attempt("exec", lambda: os.execv("/bin/true", ["true"]))
        attempt("kill_parent", lambda: os.kill(os.getppid(), 0))
        attempt("kill_self", lambda: os.kill(os.getpid(), 0))
        attempt("write", lambda: os.write(1, b""))
    """)
    assert "fork denied 1" in out and "socket denied 1" in out and "exec denied 1" in out
    assert "kill_parent denied 1" in out
    assert "kill_self allowed" in out and "write allowed" in out


def test_seccomp_program_shape() -> None:
    prog = seccomp.seccomp_program(1234)
    assert prog[-1] == (0x06, 0, 0, 0x7FFF0000)  # default: allow
    assert all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in prog)
    assert len(prog) < 4096


@pytest.mark.parametrize("as_nobody", [False, True], ids=["as_caller", "as_nobody_via_user_namespace"])
def test_network_namespace_has_no_route_to_the_host(as_nobody: bool) -> None:
    if as_nobody and os.geteuid() != 0:
        pytest.skip("already unprivileged: the first case covers the user-namespace route")
    tmp_path = Path(tempfile.mkdtemp(prefix="coda-ns-test-"))
    tmp_path.chmod(0o777)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        out = _run(f"""
            import socket
            from sandbox import isolation, seccomp
            if {as_nobody}:
                import ctypes
                "localhost".encode("idna")  # load the codec while the interpreter's files are readable
                isolation.drop_privileges(65534)
                ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: like a process started unprivileged
            info = isolation.enter_namespaces()
            print("netns", info["netns"], "userns", info["userns"])
            if info["netns"]:
                open({str(tmp_path / "probe")!r}, "w").close()  # ids are mapped: files can be created
                try:
                    socket.create_connection(("127.0.0.1", {port}), timeout=2)
                    print("connected")
                except OSError as err:
                    print("refused", type(err).__name__)
        """)
    finally:
        server.close()
    probe_made = (tmp_path / "probe").exists()
    shutil.rmtree(tmp_path, ignore_errors=True)
    if "netns False" in out:
        pytest.skip("this kernel/container does not allow a network namespace")
    assert "refused" in out and "connected" not in out
    assert probe_made
    if as_nobody:
        assert "userns True" in out


def test_address_space_limit() -> None:
    out = _run("""
        from sandbox import isolation, seccomp
        from sandbox.config import SandboxLimits
        isolation.apply_limits(SandboxLimits(memory_mb=64))
        try:
            x = bytearray(200 * 1024 * 1024)
            print("allocated")
        except MemoryError:
            print("MemoryError")
    """)
    assert out.strip() == "MemoryError"


@pytest.mark.skipif(os.geteuid() != 0, reason="privilege drop applies only when running as root")
def test_privilege_drop_makes_root_files_unwritable() -> None:
    out = _run("""
        import os
        from sandbox import isolation, seccomp
        assert isolation.drop_privileges(65534)
        print(os.geteuid(), os.getegid())
        try:
            open("/etc/coda_sandbox_probe", "w")
            print("wrote")
        except PermissionError:
            print("denied")
    """)
    assert out.split() == ["65534", "65534", "denied"]
    assert not Path("/etc/coda_sandbox_probe").exists()
