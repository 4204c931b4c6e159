"""CUDA_DEVICE_MAX_CONNECTIONS is the whole process's (the training loop's too): importing stoker
leaves it alone, and stoker.set_cuda_connections() sets it only when asked, never over a value the
user set."""
import os
import subprocess
import sys

import pytest

import stoker


def in_child(code, **env):
    """Runs code in a fresh interpreter (CUDA_DEVICE_MAX_CONNECTIONS unset unless env gives it) and
    returns its stdout."""
    child_env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    child_env.update(env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_leaves_the_variable_unset():
    assert in_child("import os, stoker; print(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS', 'unset'))") == "unset"


def test_set_cuda_connections_sets_it_when_asked():
    code = "import os, stoker; print(stoker.set_cuda_connections(), os.environ['CUDA_DEVICE_MAX_CONNECTIONS'])"
    assert in_child(code) == "32 32"
    assert in_child(code.replace("set_cuda_connections()", "set_cuda_connections(16)")) == "16 16"


def test_a_value_the_user_set_is_kept():
    code = "import os, stoker; print(stoker.set_cuda_connections(32), os.environ['CUDA_DEVICE_MAX_CONNECTIONS'])"
    assert in_child(code, CUDA_DEVICE_MAX_CONNECTIONS="8") == "8 8"


@pytest.mark.parametrize("count", [0, 33, -1, 2.5, "32", True])
def test_a_count_outside_cudas_range_is_refused(count):
    with pytest.raises(ValueError, match="1 to 32"):
        stoker.set_cuda_connections(count)
