"""The π0.5 backend is registered and configured without lerobot (the default environment)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coda_policy.pi05.configuration_pi05 import Pi05Config
from coda_policy.registry import make_config, policy_names


def test_pi05_is_registered_without_importing_lerobot():
    assert "pi05" in policy_names()
    assert make_config("pi05", size="tiny").size == "tiny"
    with pytest.raises(ValueError, match="size"):
        Pi05Config(size="huge")
    with pytest.raises(ValueError, match="tokenizer"):
        Pi05Config(size="full", pretrained="/some/ckpt")
    # listing and configuring backends loads neither lerobot nor transformers (the default install has none)
    code = ("import sys\nfrom coda_policy.registry import make_config, policy_names\npolicy_names()\n"
            "make_config('pi05')\nprint(sorted(m for m in ('lerobot', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
