"""The ColBench sandbox against hostile code: each case is contained (the call fails or
gets its honest value), the parent and the next evaluation are unaffected, nothing is
written outside the jail, and it ends within its time limit."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from agentenvs.colbench.sandbox import CallResult, MalformedOutput, Sandbox, SandboxLimits, decode

LIMITS = SandboxLimits(call_seconds=0.5)
CALLS = ["f(1)", "f(2)"]
HONEST = "def f(x):\n    return x * 2\n"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(LIMITS)


def run_contained(sandbox: Sandbox, code: str, calls=CALLS):
    """Run hostile code; check the time bound and that an honest evaluation still works after it."""
    began = time.monotonic()
    run = sandbox.run(code, calls)
    elapsed = time.monotonic() - began
    bound = LIMITS.startup_seconds + LIMITS.call_seconds * (len(calls) + 1) * 2
    assert elapsed <= bound, f"took {elapsed:.1f}s"
    after = sandbox.run(HONEST, CALLS)
    assert after.results == (CallResult(True, 2), CallResult(True, 4))
    return run


def processes_named(name: str) -> list[int]:
    """Pids of the processes whose name (``/proc/<pid>/comm``) is ``name``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError):
                continue
    return found


def failed(run) -> bool:
    return all(not result.ok for result in run.results)


def test_honest_code_gets_its_values(sandbox):
    run = sandbox.run("def f(x):\n    return [x, (x,), {x: 'a'}, {x}, None, 1.5]\n", CALLS)
    assert run.defined and run.results[0] == CallResult(True, [1, (1,), {1: "a"}, {1}, None, 1.5])


def test_infinite_loop(sandbox):
    run = run_contained(sandbox, "def f(x):\n    while True:\n        pass\n")
    assert [r.error for r in run.results] == ["timeout", "timeout"]


def test_infinite_loop_at_definition(sandbox):
    run = run_contained(sandbox, "while True:\n    pass\n")
    assert failed(run) and run.definition_error == "timeout" and run.jails == 1


def test_deep_recursion(sandbox):
    run = run_contained(sandbox, "def f(x):\n    return f(x + 1)\n")
    assert [r.error for r in run.results] == ["RecursionError", "RecursionError"]


def test_recursion_past_the_c_stack(sandbox):
    code = "import sys\nsys.setrecursionlimit(10**7)\ndef f(x):\n    return f(x + 1) + 1\n"
    run = run_contained(sandbox, code)
    assert failed(run)


def test_fork_bomb(sandbox):
    code = (
        # PR_SET_NAME (15): the name every forked child inherits
        "import ctypes, os\nctypes.CDLL(None).prctl(15, b'colbench-bomb', 0, 0, 0)\n"
        "def f(x):\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    )
    assert failed(run_contained(sandbox, code))
    deadline = time.monotonic() + 5  # the kernel tears the PID namespace down asynchronously
    while processes_named("colbench-bomb") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_named("colbench-bomb") == []


def test_processes_per_jail_are_capped(sandbox):
    code = (
        "import os\ndef f(x):\n    for _ in range(50):\n        try:\n            os.fork()\n"
        "        except OSError:\n            break\n"
        "    return len([p for p in os.listdir('/proc') if p.isdigit()])\n"
    )
    run = sandbox.run(code, ["f(0)"])
    if run.isolation != "root":
        pytest.skip(f"a jail uid of its own needs root here ({run.isolation})")
    assert run.results[0].ok and run.results[0].value <= LIMITS.max_processes


def test_memory_bomb(sandbox):
    run = run_contained(sandbox, "def f(x):\n    return len('x' * (4 * 2**30))\n")
    assert [r.error for r in run.results] == ["MemoryError", "MemoryError"]
    hoarding = "def f(x):\n    hoard = []\n    while True:\n        hoard.append(bytearray(50 * 2**20))\n"
    assert failed(run_contained(sandbox, hoarding))  # MemoryError at the cap, or the time limit first


def test_huge_output(sandbox):
    run = run_contained(sandbox, "def f(x):\n    print('y' * 10**7)\n    return 'x' * 10**7\n")
    assert [r.error for r in run.results] == ["output too large", "output too large"]


def test_huge_output_written_past_the_jail_protocol(sandbox):
    code = (
        "import os\ndef f(x):\n    for fd in range(3, 8):\n        try:\n"
        "            os.write(fd, b'z' * 10**7)\n        except OSError:\n            pass\n    return x\n"
    )
    run = run_contained(sandbox, code)
    assert failed(run)


def test_reading_files_outside_the_jail(sandbox, tmp_path):
    secret = tmp_path / "hidden" / "tests.jsonl"
    secret.parent.mkdir()
    secret.write_text("the hidden tests")
    hiding = Sandbox(LIMITS, hide=[str(secret.parent)])
    code = (
        "def f(x):\n    found = []\n"
        f"    for path in ['/etc/shadow', {str(secret)!r},\n"
        f"                 '/proc/{os.getpid()}/environ', '/proc/1/environ']:\n"
        "        try:\n            found.append(open(path).read())\n"
        "        except OSError:\n            pass\n"
        "    return found\n"
    )
    run = hiding.run(code, ["f(0)"])
    assert run.results == (CallResult(True, []),)


def test_the_parents_environment_is_not_passed(sandbox):
    os.environ["COLBENCH_TEST_SECRET"] = "s3cret"
    try:
        run = run_contained(sandbox, "import os\ndef f(x):\n    return dict(os.environ)\n", ["f(0)"])
    finally:
        del os.environ["COLBENCH_TEST_SECRET"]
    [result] = run.results
    assert result.ok and set(result.value) <= {"LC_CTYPE"}  # the interpreter's own locale coercion (PEP 538)


def test_opening_a_socket_to_localhost(sandbox):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.05)
    port = server.getsockname()[1]
    code = (
        "import socket\ndef f(x):\n    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=0.2)\n        return 'connected'\n"
        "    except OSError as exc:\n        return type(exc).__name__\n"
    )
    run = run_contained(sandbox, code, ["f(0)"])
    assert run.results[0].ok and run.results[0].value != "connected"
    with pytest.raises(TimeoutError):
        server.accept()
    server.close()


def test_writing_to_the_home_dir_and_tmp(sandbox):
    name = f"colbench-jail-write-{os.getpid()}"
    code = (
        "import os\ndef f(x):\n    wrote = []\n"
        f"    for path in [os.path.expanduser('~/{name}'), '/root/{name}',\n"
        f"                 '/tmp/{name}', '/var/tmp/{name}',\n"
        f"                 '/run/lock/{name}', '/dev/shm/{name}']:\n"
        "        try:\n            open(path, 'w').write('x')\n            wrote.append(path)\n"
        "        except OSError:\n            pass\n    return wrote\n"
    )
    run_contained(sandbox, code, ["f(0)"])
    for folder in (
        Path.home(),
        Path("/root"),
        Path("/tmp"),
        Path("/var/tmp"),
        Path("/run/lock"),
        Path("/dev/shm"),
    ):
        assert not (folder / name).exists()


def test_killing_the_parent(sandbox):
    code = (
        "import os, signal\ndef f(x):\n"
        f"    for pid in (os.getppid(), {os.getpid()}, -1):\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
        "    return x\n"
    )
    run_contained(sandbox, code)  # this test process survives to check the next evaluation


def test_sys_exit(sandbox):
    run = run_contained(sandbox, "import sys\ndef f(x):\n    sys.exit(3)\n")
    assert [r.error for r in run.results] == ["SystemExit", "SystemExit"]


def test_os_exit(sandbox):
    run = run_contained(sandbox, "import os\ndef f(x):\n    os._exit(0)\n")
    assert [r.error for r in run.results] == ["the code ended its process"] * 2 and run.jails == 2


def test_ctypes_segfault(sandbox):
    run = run_contained(sandbox, "import ctypes\ndef f(x):\n    return ctypes.string_at(0)\n")
    assert failed(run)


def test_monkeypatching_builtins(sandbox):
    code = (
        "import builtins, json\nbuiltins.len = lambda x: 0\n"
        "builtins.range = None\nbuiltins.isinstance = None\n"
        'json.dumps = lambda *a, **k: \'{"i": 0, "v": 42}\'\ndef f(x):\n    return x * 2\n'
    )
    run = run_contained(sandbox, code)
    assert run.results == (CallResult(True, 2), CallResult(True, 4))


def test_objects_lying_about_equality_gain_nothing(sandbox):
    code = (
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "class Int(int):\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return Anything() if x == 1 else Int(5)\n"
    )
    run = run_contained(sandbox, code)
    assert [r.error for r in run.results] == ["Unserialisable", "Unserialisable"]


def test_a_call_that_sleeps_past_the_limit(sandbox):
    code = "import time\ndef f(x):\n    if x == 1:\n        time.sleep(30)\n    return x\n"
    run = run_contained(sandbox, code)
    assert run.results == (CallResult(False, error="timeout"), CallResult(True, 2))


def test_importing_a_module_that_does_not_exist(sandbox):
    run = run_contained(sandbox, "import no_such_module_here\ndef f(x):\n    return x\n")
    assert run.definition_error == "ModuleNotFoundError" and failed(run)


def test_the_jail_runs_without_privileges(sandbox):
    code = "import os\ndef f(x):\n    return [os.getuid() != 0, os.listdir('.'), os.getpid()]\n"
    run = sandbox.run(code, ["f(0)"])
    if run.isolation != "root":
        pytest.skip(f"namespaces need root here ({run.isolation})")
    assert run.results == (CallResult(True, [True, [], 1]),)


@pytest.mark.parametrize(
    "node",
    [{"x": 1}, {"l": 5}, {"d": [[{"l": []}, 1]]}, {"b": "zz"}, {"l": [1], "t": [2]}, [1, 2]],
)
def test_decode_rejects_malformed_nodes(node):
    with pytest.raises(MalformedOutput):
        decode(node)
