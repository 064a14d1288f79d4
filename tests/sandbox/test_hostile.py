"""Hostile programs: each one is contained with the right error kind, the host is unaffected (files it
tries to create do not exist, secrets do not leak), and the pool still runs a normal program afterwards."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import pytest

from sandbox import SandboxPool
from tests.sandbox.conftest import TEST_LIMITS, assert_alive
from tests.sandbox.programs import body


@dataclass(frozen=True)
class Hostile:
    id: str
    source: str
    kind: str | None  # expected error kind; None: contained but allowed to finish (output truncated)
    cpu_s: float | None = None
    wall_s: float | None = None


NP = "import numpy as np\n"


def _pickle(module: str, name: str, arg: str) -> bytes:
    """A protocol-0 pickle that calls module.name(arg) when loaded."""
    return f"c{module}\n{name}\n({arg}\ntR.".encode()


HOSTILE = [
    # --- rejected before running: imports -------------------------------------------------------------
    Hostile("import_os_system", "import os\n" + body("    os.system('touch {marker}')"), "rejected_import"),
    Hostile("import_subprocess", "import subprocess\n" + body("    subprocess.run(['touch', '{marker}'])"),
            "rejected_import"),
    Hostile("import_socket", "import socket\n" + body("    socket.create_connection(('1.1.1.1', 80))"),
            "rejected_import"),
    Hostile("import_ctypes", "import ctypes\n" + body("    ctypes.CDLL(None).system(b'touch {marker}')"),
            "rejected_import"),
    Hostile("fork_bomb", "import os\n" + body("    while True:\n        os.fork()"), "rejected_import"),
    Hostile("thread_bomb", "import threading\n" + body(
        "    while True:\n        threading.Thread(target=lambda: None).start()"), "rejected_import"),
    Hostile("signal_tamper", "import signal\n" + body("    signal.signal(signal.SIGXCPU, signal.SIG_IGN)"),
            "rejected_import"),
    Hostile("sys_modules_tamper", "import sys\n" + body("    sys.modules['numpy'] = None"),
            "rejected_import"),
    Hostile("environ_read", "from os import environ\n" + body("    print(dict(environ))"), "rejected_import"),
    Hostile("importlib", "import importlib\n" + body(
        "    importlib.import_module('os').system('touch {marker}')"), "rejected_import"),
    Hostile("builtins_module", "import builtins\n" + body("    builtins.open('{marker}', 'w')"),
            "rejected_import"),
    Hostile("sim_mujoco_names", "from sim import SimEnv\n" + body("    print(SimEnv)"), "rejected_import"),
    Hostile("numpy_ctypeslib_import", "import numpy.ctypeslib\n" + body("    pass"), "rejected_import"),
    Hostile("star_import", "from numpy import *\n" + body("    pass"), "rejected_import"),
    Hostile("relative_import", "from . import secrets\n" + body("    pass"), "rejected_import"),
    # --- rejected before running: the AST check -------------------------------------------------------
    Hostile("read_passwd_open", body("    print(open('/etc/passwd').read())"), "rejected_code"),
    Hostile("write_tmp_open", body("    open('{marker}', 'w').write('x')"), "rejected_code"),
    Hostile("dunder_import", body("    __import__('os').system('touch {marker}')"), "rejected_code"),
    Hostile("builtins_dict", body("    __builtins__['eval']('1')"), "rejected_code"),
    Hostile("eval", body("    eval(\"__import__('os')\")"), "rejected_code"),
    Hostile("exec_compile", body("    exec(compile('x = 1', 'f', 'exec'))"), "rejected_code"),
    Hostile("globals_walk", body("    print(globals()['_scene'])"), "rejected_code"),
    Hostile("subclasses_walk", body(
        "    for c in ().__class__.__base__.__subclasses__():\n        print(c)"), "rejected_code"),
    Hostile("gi_frame_escape", body("    g = (i for i in [1])\n    print(g.gi_frame.f_back.f_globals)"),
            "rejected_code"),
    Hostile("traceback_frame", body(
        "    try:\n        1 / 0\n    except Exception as e:\n        print(e.__traceback__.tb_frame)"),
        "rejected_code"),
    Hostile("format_string_escape", body("    print('{{0.__init__.__globals__}}'.format(_scene))"),
            "rejected_code"),
    Hostile("match_class_attr", body("    match 1:\n        case object(__class__=c):\n            print(c)"),
            "rejected_code"),
    Hostile("array_interface", body(
        "    class Evil:\n"
        "        __array_interface__ = {{'data': (8, False), 'shape': (8,), 'typestr': '<u8'}}"),
        "rejected_code"),
    Hostile("resize_refcheck", NP + body("    a = np.zeros(10)\n    a.resize(10 ** 6, refcheck=False)"),
            "rejected_code"),
    Hostile("metaclass", body("    class M(type):\n        pass\n    class X(metaclass=M):\n        pass"),
            "rejected_code"),
    Hostile("shadow_guard", body("    _sbx_getattr = lambda o, n: 1"), "rejected_code"),
    Hostile("vars_locals", body("    print(vars(), locals())"), "rejected_code"),
    Hostile("no_generate", "import numpy as np\nx = np.zeros(3)\n", "rejected_code"),
    Hostile("syntax_error", "def generate(rng:\n    return 1\n", "syntax"),
    Hostile("return_outside_function", "return 1\ndef generate(rng):\n    pass\n", "syntax"),
    Hostile("deep_nesting", body("    x = " + "not " * 2000 + "1"), "rejected_code"),
    Hostile("parser_bomb", body("    x = " + "(" * 5000 + ")" * 5000), "syntax"),
    Hostile("source_too_large", "x = 1\n" * 40_000 + body("    pass"), "rejected_code"),
    # --- runtime: attribute guard, audit hook, scratch-only files -------------------------------------
    Hostile("np_load_passwd", NP + body("    print(np.load('/etc/passwd'))"), "forbidden"),
    Hostile("np_fromfile_passwd", NP + body("    print(np.fromfile('/etc/passwd', dtype=np.uint8))"),
            "forbidden"),
    Hostile("np_loadtxt_shadow", NP + body("    print(np.loadtxt('/etc/shadow', dtype=str))"), "forbidden"),
    Hostile("np_save_tmp", NP + body("    np.save('{marker}', np.zeros(3))"), "forbidden"),
    Hostile("relative_escape", NP + body("    np.save('../../{marker_name}', np.zeros(3))"), "forbidden"),
    Hostile("result_channel_fd1", NP + body("    np.savetxt('/proc/self/fd/1', np.zeros(3))"), "forbidden"),
    Hostile("result_channel_fd3", NP + body("    np.zeros(3).tofile('/proc/self/fd/3')"), "forbidden"),
    Hostile("result_channel_stdout", NP + body("    np.zeros(3).tofile('/dev/stdout')"), "forbidden"),
    Hostile("getattr_dunder_string", body("    print(getattr((), '__cla' + 'ss__'))"), "forbidden"),
    Hostile("getattr_frame_string", body("    g = (i for i in [1])\n    print(getattr(g, 'gi_' + 'frame'))"),
            "forbidden"),
    Hostile("hasattr_private", NP + body("    print(hasattr(np, '_co' + 're'))"), "forbidden"),
    Hostile("module_walk_mtrand", NP + body("    print(getattr(np.random, 'mt' + 'rand'))"), "forbidden"),
    Hostile("module_walk_dir", NP + body(
        "    for n in dir(np):\n        v = getattr(np, n)\n        print(getattr(v, 'path', None))"),
        "forbidden"),
    Hostile("module_attribute_lib", NP + body("    print(getattr(np, 'li' + 'b'))"), "forbidden"),
    Hostile("numpy_lazy_submodule", NP + body("    print(np.ma.core)"), "forbidden"),
    Hostile("numpy_ctypeslib_getattr", NP + body("    print(getattr(np, 'ctypes' + 'lib'))"), "forbidden"),
    Hostile("pickle_os_system", NP + body(
        "    np.frombuffer({pickle_system!r}, dtype=np.uint8).tofile('evil.pkl')\n"
        "    np.load('evil.pkl', allow_pickle=True)"), "forbidden"),
    Hostile("pickle_kill_group", NP + body(
        "    np.frombuffer({pickle_kill!r}, dtype=np.uint8).tofile('evil.pkl')\n"
        "    np.load('evil.pkl', allow_pickle=True)"), "forbidden"),
    Hostile("patch_scene_class", body("    SceneSpec.model_dump_json = lambda self: '{{}}'"),
            "rejected_code"),
    # the patch has no effect: scenes are written by the serializer captured before the program ran
    Hostile("patch_via_alias", body("    S = SceneSpec\n    S.model_dump_json = lambda self: '{{}}'"), None),
    Hostile("swallowed_denial", NP + body(
        "    try:\n        np.load('/etc/passwd')\n    except BaseException:\n        pass"), "forbidden"),
    Hostile("three_arg_type", body("    X = type('X', (), {{'__array_interface__': {{}}}})"), "runtime"),
    Hostile("file_size_limit", NP + body("    np.zeros(10 ** 7).tofile('big.bin')"), "runtime"),
    # --- runtime: resource limits --------------------------------------------------------------------
    Hostile("infinite_loop", body("    while True:\n        pass"), "timeout"),
    Hostile("cpu_burn_generator", body("    print(sum(i * i for i in range(10 ** 12)))"), "timeout"),
    Hostile("swallowed_timeout", body(
        "    while True:\n        try:\n            while True:\n                pass\n"
        "        except:\n            pass"), "timeout"),  # swallowed; the hard CPU limit kills it
    Hostile("cpu_stuck_in_c", body("    x = 7 ** (10 ** 8)"), "timeout"),  # no bytecode boundary to interrupt
    Hostile("wall_clock", body("    while True:\n        pass"), "timeout", cpu_s=30, wall_s=1),
    Hostile("memory_list", body("    x = [0] * (10 ** 10)"), "memory"),
    Hostile("memory_numpy", NP + body("    x = np.ones((1 << 20, 1 << 14))"), "memory"),
    # CPU time to spare: under a loaded machine the page faults of 256 MB took over the 1 s default once
    Hostile("memory_growth", body(
        "    chunks = []\n    while True:\n        chunks.append(bytearray(10 ** 6))"), "memory", cpu_s=5),
    Hostile("memory_string", body("    s = 'x' * (10 ** 10)"), "memory"),
    Hostile("recursion_bomb", body("    def f(n):\n        return f(n + 1)\n    f(0)"), "runtime"),
    Hostile("nested_repr_bomb", body(
        "    a = []\n    for _ in range(10 ** 6):\n        a = [a]\n    print(repr(a))"), "runtime"),
    Hostile("huge_result", body("    return [_scene()] * 100_000"), "output_too_large"),
    # refused where the scene is built: an instruction is at most 500 characters (SceneSpec's bounds)
    Hostile("huge_instruction", body("    return _scene('x' * 5_000_000)"), "runtime"),
    # a lone surrogate is refused where the scene is built (SceneSpec's text pattern needs valid Unicode)
    Hostile("unserialisable_scene", body("    return _scene('\\ud800')"), "runtime"),
    Hostile("invalid_output", body("    return {{'family': 'x'}}"), "invalid_output"),
    Hostile("invalid_output_construct", body("    return SceneSpec.model_construct(family=1)"),
            "invalid_output"),
    Hostile("huge_print", body("    for i in range(200_000):\n        print('x' * 100)"), None),
    Hostile("fake_result_frame", body(
        "    print('\\x00\\x00\\x00\\x10{{\"ok\": true, \"scenes\": []}}')"), None),
]


def _render(h: Hostile, marker: str) -> str:
    return h.source.format(marker=marker, marker_name=os.path.basename(marker),
                           pickle_system=_pickle("os", "system", f"S'touch {marker}'"),
                           pickle_kill=_pickle("os", "kill", "I0\nI9"))


def test_suite_size() -> None:
    assert len(HOSTILE) >= 40
    assert len({h.id for h in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.id for h in HOSTILE])
def test_hostile_program_is_contained(pool: SandboxPool, hostile: Hostile) -> None:
    marker = f"/tmp/coda_pwned_{hostile.id}.npy"
    if os.path.exists(marker):
        os.remove(marker)
    limits = replace(TEST_LIMITS, cpu_s=hostile.cpu_s or TEST_LIMITS.cpu_s,
                     wall_s=hostile.wall_s or TEST_LIMITS.wall_s)
    pids = pool.worker_pids
    result = pool.run(_render(hostile, marker), seed=0, limits=limits)
    kind = result.error.kind if result.error else None
    assert kind == hostile.kind, result.error
    if result.error:
        assert result.error.message and result.error.traceback
    assert not os.path.exists(marker), "the hostile program reached the host file system"
    text = result.model_dump_json()
    assert "root:x:0:0" not in text  # /etc/passwd content never comes back
    assert len(result.stdout) <= TEST_LIMITS.max_output_chars + 100
    if kind not in ("timeout", "crashed"):
        assert pool.worker_pids == pids  # contained inside the task process: the worker survived
    assert_alive(pool)


def test_huge_print_is_truncated(pool: SandboxPool) -> None:
    result = pool.run(body("    for i in range(200_000):\n        print('x' * 100)"), limits=TEST_LIMITS)
    assert result.ok
    assert result.stdout.endswith("characters of output dropped]")
    assert result.stdout.startswith("x" * 100)
