"""--arch auto on a GPU machine: nvidia-smi, found on PATH and run through the
build's runner, names this machine's GPUs; the answer is kept in the cache's
gpus.json, so the next run asks nothing (`bekc doctor` says where it came
from).

Run on the GPU machine: BEKC=build/bekc python -m pytest -q tests/gpu/test_gpu_detect.py
"""
import json
import re
import subprocess

from conftest import BEKC


def doctor_gpus(cache_dir):
    out = subprocess.run([BEKC, "doctor", "--cache-dir", str(cache_dir)], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("GPUs"))
    return line.split(None, 1)[1]


def test_gpus_come_from_nvidia_smi_then_from_the_memo(tmp_path):
    first = doctor_gpus(tmp_path)
    assert re.fullmatch(r"sm_\d+[a-z]?(,sm_\d+[a-z]?)* \(nvidia-smi\)", first), first
    memo = json.loads((tmp_path / "gpus.json").read_text())
    assert memo["archs"] and all(isinstance(a, str) for a in memo["archs"])
    second = doctor_gpus(tmp_path)
    assert second == first.replace("(nvidia-smi)", "(remembered from nvidia-smi)")
